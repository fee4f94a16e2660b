import { ALL_ROLES, COORDINATOR_ROLES, type ApiRoute } from "../api-route";
import { type TaskAction, CreateTaskWithIntentBody, taskCommands } from "../tasks";

/** The task moves share one code path (services/intents/src/tasks/moves.ts) and so one declaration. */
const taskMove = <A extends TaskAction>(action: A, summary: string) =>
  ({
    operationId: `tasks${(action.charAt(0).toUpperCase() + action.slice(1)) as Capitalize<A>}`,
    tag: "Tasks",
    method: "post",
    path: `/tasks/{task_id}/${action}`,
    command: taskCommands[action],
    body: "body",
    ifMatch: "optional",
    etag: true,
    access: { roles: ALL_ROLES },
    summary,
  }) as const satisfies ApiRoute;

/** Tasks (docs/tasks.md). Every answer carries the task's version as ETag. */
export const tasksRoutes = [
  {
    operationId: "tasksCreate",
    tag: "Tasks",
    method: "post",
    path: "/intents/{intent_id}/tasks",
    command: taskCommands.create,
    body: "body",
    status: 201,
    etag: true,
    access: { roles: COORDINATOR_ROLES },
    summary: "Create a task in an intent (coordinators and admins); name is accepted for title",
  },
  {
    operationId: "tasksCreateWithIntentId",
    tag: "Tasks",
    method: "post",
    path: "/tasks",
    command: taskCommands.create,
    liftFromBody: ["intent_id"],
    body: "body",
    status: 201,
    etag: true,
    access: { roles: COORDINATOR_ROLES },
    documentedBody: CreateTaskWithIntentBody,
    summary: "Create a task; the body names its intent_id (the clients' route)",
  },
  {
    operationId: "tasksList",
    tag: "Tasks",
    method: "get",
    path: "/intents/{intent_id}/tasks",
    command: taskCommands.list,
    query: "query",
    access: { roles: ALL_ROLES },
    summary: "List an intent's tasks, oldest first (filters status, assigned_agent; cursor pages)",
  },
  {
    operationId: "tasksGet",
    tag: "Tasks",
    method: "get",
    path: "/tasks/{task_id}",
    command: taskCommands.get,
    etag: true,
    access: { roles: ALL_ROLES },
    summary: "Read a task",
  },
  {
    operationId: "tasksPatch",
    tag: "Tasks",
    method: "patch",
    path: "/tasks/{task_id}",
    command: taskCommands.patch,
    body: "body",
    ifMatch: "required",
    etag: true,
    access: { roles: ALL_ROLES },
    summary: "Change status, assigned_agent, output, error or blocked_reason (If-Match required: 428 without, 409 stale)",
  },
  taskMove("claim", "Claim a ready task: the acting agent (X-Agent-ID) takes an unassigned task, or the one assigned to it"),
  taskMove("start", "Start a claimed task (its assigned agent, a coordinator or an admin)"),
  taskMove("complete", "Complete a running task with its output (its assigned agent, a coordinator or an admin)"),
  taskMove("fail", "Fail a task: back to ready while its retry policy (or its intent's) has retries left, else failed"),
  { ...taskMove("cancel", "Cancel a task (coordinators and admins)"), access: { roles: COORDINATOR_ROLES } },
] as const satisfies readonly ApiRoute[];
