import { z } from "./zod";
import { ACCESS_CHECKS_PER_REQUEST, AccessAllowed, IntentAccessCheck, IntentPermission } from "./acl";
import { command, IntentRef } from "./command";
import { GovernanceAllowed, GovernedWriteKind } from "./governance";

/** A refusal inside an answer that carries verdicts: the wire error that check alone would have answered. */
const Refusal = z.object({
  error: z.object({ code: z.string(), status: z.number().int(), message: z.string(), details: z.record(z.string(), z.unknown()).optional(), extra: z.record(z.string(), z.unknown()).optional() }),
});

/**
 * A write another service takes on an intent for a caller (a channel message): its access check
 * (acl.check) and its governance check (spec 2.11, governance.check) asked in one request and
 * read in one statement, instead of two requests and two statements. Access decides the answer;
 * the governance verdict travels beside it, so the asker still applies its own checks between
 * the two and answers the same error first as when it asked them apart.
 */
export const IntentWriteCheck = IntentAccessCheck.extend({ kind: GovernedWriteKind });
export type IntentWriteCheck = z.infer<typeof IntentWriteCheck>;
export const WriteAllowed = AccessAllowed.extend({ governance: z.union([GovernanceAllowed, Refusal]) });
export type WriteAllowed = z.infer<typeof WriteAllowed>;
export const WriteVerdicts = z.object({ results: z.array(z.union([WriteAllowed, Refusal])) });
export type WriteVerdicts = z.infer<typeof WriteVerdicts>;

/** Served by the intents service, which keeps each intent's ACL and governance policy in its row. */
export const writeCheckCommands = {
  /**
   * {allowed, permission, governance} when the caller holds `permission` on the intent,
   * `governance` being {allowed: true} or the {error} governance.check would have answered; else
   * 403 INTENT_ACCESS_DENIED (404 for no intent). Read when the request is served and cached
   * nowhere, as both checks: a revocation or a policy that has answered binds every later check.
   */
  check: command("intents", "acl.check_write", IntentRef.extend({ permission: IntentPermission, kind: GovernedWriteKind }), WriteAllowed, ["INTENT_ACCESS_DENIED", "INTENT_NOT_FOUND"]),
  /**
   * Many write checks in one request, each with its own caller (libs/service IntentWriteChecks):
   * {results} in the order asked, each the answer of acl.check_write or its {error}. 500
   * REPLY_TOO_LARGE as governance.check_many (refusals name up to 1,000 allowed_agents): the
   * asker then sends them one by one.
   */
  checkMany: command("intents", "acl.check_write_many", z.object({ checks: z.array(IntentWriteCheck).min(1).max(ACCESS_CHECKS_PER_REQUEST) }), WriteVerdicts, ["REPLY_TOO_LARGE"]),
} as const;
