import { describe, expect, it } from "vitest";
import type { Caller } from "@intentmesh/contracts";
import { allows } from "./access";

const caller = (actor: string, ...roles: Caller["roles"]): Caller => ({ principal: actor, roles, actor, agent_id: roles.includes("agent") ? actor : null });
const agent = caller("worker-1", "agent");
const other = caller("worker-2", "agent");
const coordinator = caller("lead", "coordinator");
const admin = caller("root", "admin");
const operator = caller("ops", "operator");

describe("ownership in the intents service", () => {
  it("renews a lease for its holder only, and releases it for its holder, coordinators and admins", () => {
    expect(allows(agent, { permission: "lease.renew", holder: "worker-1" })).toBe(true);
    for (const c of [other, coordinator, admin, operator]) expect(allows(c, { permission: "lease.renew", holder: "worker-1" })).toBe(false);
    for (const c of [agent, coordinator, admin]) expect(allows(c, { permission: "lease.release", holder: "worker-1" })).toBe(true);
    for (const c of [other, operator]) expect(allows(c, { permission: "lease.release", holder: "worker-1" })).toBe(false);
  });

  it("deletes an attachment for its uploader, coordinators and admins", () => {
    for (const c of [agent, coordinator, admin]) expect(allows(c, { permission: "attachment.delete", uploadedBy: "worker-1" })).toBe(true);
    for (const c of [other, operator]) expect(allows(c, { permission: "attachment.delete", uploadedBy: "worker-1" })).toBe(false);
  });

  it("moves a task for its assigned agent, coordinators and admins; an unassigned task for coordinators and admins", () => {
    for (const c of [agent, coordinator, admin]) expect(allows(c, { permission: "task.move", assignedAgent: "worker-1" })).toBe(true);
    for (const c of [other, operator]) expect(allows(c, { permission: "task.move", assignedAgent: "worker-1" })).toBe(false);
    expect(allows(agent, { permission: "task.move", assignedAgent: null })).toBe(false);
    expect(allows(coordinator, { permission: "task.move", assignedAgent: null })).toBe(true);
  });

  it("lets an agent key claim for itself a task unassigned or its own; coordinators and admins claim for anyone", () => {
    expect(allows(agent, { permission: "task.claim", assignedAgent: null, agent: "worker-1" })).toBe(true);
    expect(allows(agent, { permission: "task.claim", assignedAgent: "worker-1", agent: "worker-1" })).toBe(true);
    expect(allows(agent, { permission: "task.claim", assignedAgent: "worker-2", agent: "worker-1" })).toBe(false);
    expect(allows(agent, { permission: "task.claim", assignedAgent: null, agent: "worker-2" })).toBe(false);
    expect(allows(operator, { permission: "task.claim", assignedAgent: null, agent: "ops" })).toBe(false);
    expect(allows(coordinator, { permission: "task.claim", assignedAgent: "worker-2", agent: "worker-1" })).toBe(true);
    expect(allows(admin, { permission: "task.assign" })).toBe(true);
    expect(allows(agent, { permission: "task.assign" })).toBe(false);
  });
});
