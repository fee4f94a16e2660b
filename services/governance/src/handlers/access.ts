import { errors, type Caller } from "@intentmesh/contracts";

/**
 * Who may answer a suspension and decide an approval: operators, coordinators and admins
 * (spec 5.5 asks implementations to restrict who responds). Agent keys may suspend and request
 * approvals, never answer or decide.
 */
export function assertHumanRole(caller: Caller, what: string): void {
  if (!caller.roles.some((role) => role === "operator" || role === "coordinator" || role === "admin")) {
    throw errors.forbidden(`only operator, coordinator and admin keys may ${what}`, { required_roles: ["operator", "coordinator", "admin"] });
  }
}
