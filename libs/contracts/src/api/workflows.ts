import { ALL_ROLES, COORDINATOR_ROLES, type ApiRoute } from "../api-route";
import { workflowCommands } from "../workflows";

/**
 * Workflows (RFC 0024, docs/workflows.md): the MCP server's paths, which the other
 * implementation does not serve, mapped onto plans (a run is a plan of a new intent).
 */
export const workflowsRoutes = [
  {
    operationId: "workflowsCreate",
    tag: "Workflows",
    method: "post",
    path: "/workflows",
    command: workflowCommands.create,
    body: "body",
    status: 201,
    access: { roles: COORDINATOR_ROLES, claimsIdentity: ["created_by"] },
    summary: "Register a workflow from its YAML; types and input wiring are checked (the MCP server's openintent_create_workflow)",
  },
  {
    operationId: "workflowsList",
    tag: "Workflows",
    method: "get",
    path: "/workflows",
    command: workflowCommands.list,
    query: "query",
    access: { roles: ALL_ROLES },
    summary: "The workflows, oldest first, as a bare list paged by limit and offset; a page also stops before 768 KiB of JSON (the MCP server's openintent_list_workflows)",
  },
  {
    operationId: "workflowsGet",
    tag: "Workflows",
    method: "get",
    path: "/workflows/{workflow_id}",
    command: workflowCommands.get,
    access: { roles: ALL_ROLES },
    summary: "A workflow, its YAML and its recent runs with progress and suspended_phases (the MCP server's openintent_get_workflow)",
  },
  {
    operationId: "workflowsTrigger",
    tag: "Workflows",
    method: "post",
    path: "/workflows/{workflow_id}/trigger",
    command: workflowCommands.trigger,
    body: "body",
    status: 201,
    access: { roles: COORDINATOR_ROLES },
    summary: "Start a run: a new intent with an active plan whose tasks are the phases (the MCP server's openintent_trigger_workflow)",
  },
  {
    operationId: "workflowsUpdate",
    tag: "Workflows",
    method: "patch",
    path: "/workflows/{workflow_id}",
    command: workflowCommands.update,
    body: "body",
    ifMatch: "required",
    etag: true,
    access: { roles: COORDINATOR_ROLES },
    summary: "Change a workflow's name, description or YAML (checked as at create); If-Match required; runs already started keep what they were started with",
  },
  {
    operationId: "workflowsDelete",
    tag: "Workflows",
    method: "delete",
    path: "/workflows/{workflow_id}",
    command: workflowCommands.delete,
    ifMatch: "optional",
    access: { roles: COORDINATOR_ROLES },
    summary: "Delete a workflow definition (If-Match optional, a stale one is 409); its runs go on and stay readable as plans",
  },
] as const satisfies readonly ApiRoute[];
