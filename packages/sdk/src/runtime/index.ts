export { startAgent, type AgentRecord, type AgentSession, type AgentSessionOptions, type SessionEnd } from "./agent";
export { holdLease, LeaseLostError, type HeldLease, type LeaseOptions } from "./lease";
export { retryOnConflict, updateIntentState, type ConflictRetryOptions, type StatePatches } from "./concurrency";
export { runTaskLoop, TaskFailure, type TaskContext, type TaskLoopOptions, type TaskLoopSummary } from "./tasks";
export { requestInput, shouldRequestInput, InputCancelledError, InputTimeoutError, type CascadeLevel, type InputAnswer, type InputOptions, type InputRequest } from "./input";
export { requestApproval, waitForDecision, type Approval, type ApprovalOutcome } from "./approvals";
