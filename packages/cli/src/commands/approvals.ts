import type { Command } from "commander";
import { contextFor, type Runtime } from "../context";
import { statusStyle } from "../output";

export function registerApprovals(program: Command, runtime: Runtime): void {
  const approvals = program.command("approvals").description("approval requests of an intent, and their decisions");
  approvals
    .command("list")
    .description("an intent's approval requests (pending ones by default)")
    .argument("<intent>", "intent id")
    .option("--status <status>", "pending (default), approved, denied, or all", "pending")
    .action(async (intentId: string, options: { status: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const status = options.status === "all" ? undefined : (options.status as "pending" | "approved" | "denied");
      const list = await ctx.client.ops.governanceListApprovals({ intent_id: intentId, query: { status } });
      if (ctx.out.json) return ctx.out.data(list.approvals);
      ctx.out.table(list.approvals, [
        { header: "APPROVAL", value: (a) => a.id },
        { header: "STATUS", value: (a) => a.status, style: (a) => statusStyle(a.status) },
        { header: "ACTION", value: (a) => a.action },
        { header: "BY", value: (a) => a.requested_by },
        { header: "ASKED", value: (a) => ctx.out.ago(a.created_at) },
        { header: "REASON", value: (a) => a.reason ?? "" },
      ], `no ${options.status === "all" ? "" : `${options.status} `}approvals`);
    });

  for (const decision of ["approve", "deny"] as const) {
    approvals
      .command(decision)
      .description(`${decision} a pending approval (operators, coordinators, admins; never the requester)`)
      .argument("<intent>", "intent id")
      .argument("<approval>", "approval id")
      .option("--reason <text>", "why")
      .action(async (intentId: string, approvalId: string, options: { reason?: string }, command: Command) => {
        const ctx = contextFor(command, runtime);
        const request = { intent_id: intentId, approval_id: approvalId, body: options.reason ? { reason: options.reason } : {} };
        const approval = decision === "approve" ? await ctx.client.ops.governanceApprove(request) : await ctx.client.ops.governanceDeny(request);
        if (ctx.out.json) return ctx.out.data(approval);
        ctx.out.line(`${approval.id} ${ctx.out.status(approval.status)} (${approval.action})`);
      });
  }
}
