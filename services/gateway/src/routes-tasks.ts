import type { Request } from "express";
import { CreateTaskWithIntentBody, taskCommands as t, TASK_ACTIONS, type TaskAction } from "@intentmesh/contracts";
import type { Route } from "./routes";
import { id, ifMatch } from "./route-params";

const taskId = (req: Request) => String(req.params.taskId);

const actionSummaries: Record<TaskAction, string> = {
  claim: "Claim a ready task: the acting agent (X-Agent-ID) takes an unassigned task, or the one assigned to it",
  start: "Start a claimed task (its assigned agent, a coordinator or an admin)",
  complete: "Complete a running task with its output (its assigned agent, a coordinator or an admin)",
  fail: "Fail a task: back to ready while its retry policy (or its intent's) has retries left, else failed",
  cancel: "Cancel a task (coordinators and admins)",
};

/** Tasks (docs/tasks.md): units of work inside an intent. Every answer carries the task's version as ETag. */
export const taskRoutes: Route[] = [
  {
    method: "post",
    path: "/intents/:id/tasks",
    command: t.create,
    input: (req) => ({ intent_id: id(req), body: req.body }),
    status: 201,
    etag: true,
    summary: "Create a task in an intent (coordinators and admins); name is accepted for title",
  },
  {
    method: "post",
    path: "/tasks",
    command: t.create,
    input: (req) => {
      // The clients' form: intent_id in the body; the same command as the nested route.
      const { intent_id, ...body } = (req.body ?? {}) as Record<string, unknown>;
      return { intent_id, body };
    },
    status: 201,
    etag: true,
    documentedBody: CreateTaskWithIntentBody,
    summary: "Create a task; the body names its intent_id (the clients' route)",
  },
  { method: "get", path: "/intents/:id/tasks", command: t.list, input: (req) => ({ intent_id: id(req), query: req.query }), summary: "List an intent's tasks, oldest first (filters status, assigned_agent; cursor pages)" },
  { method: "get", path: "/tasks/:taskId", command: t.get, input: (req) => ({ task_id: taskId(req) }), etag: true, summary: "Read a task" },
  {
    method: "patch",
    path: "/tasks/:taskId",
    command: t.patch,
    input: (req) => ({ task_id: taskId(req), if_match: ifMatch(req), body: req.body }),
    etag: true,
    summary: "Change status, assigned_agent, output, error or blocked_reason (If-Match required: 428 without, 409 stale)",
  },
  ...TASK_ACTIONS.map(
    (action): Route => ({
      method: "post",
      path: `/tasks/:taskId/${action}`,
      command: t[action],
      input: (req) => ({ task_id: taskId(req), if_match: ifMatch(req), body: req.body }),
      etag: true,
      summary: actionSummaries[action],
    }),
  ),
];
