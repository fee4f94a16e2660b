import { appError } from "@intentmesh/contracts";
import { LIMITS, jsonBytes, type JsonObject } from "@intentmesh/contracts";

/**
 * An intent's state, serialized, stays within LIMITS.stateBytes, so the intent and every reply
 * carrying it fit in one bus message. Checked on the state a write would leave, before the write.
 */
export function assertStateWithinLimit(intentId: string, state: JsonObject): void {
  const bytes = jsonBytes(state);
  if (bytes > LIMITS.stateBytes) {
    throw appError("STATE_TOO_LARGE", `the state of intent ${intentId} would be ${bytes} bytes of JSON, more than the limit of ${LIMITS.stateBytes}; keep large data elsewhere and attach a reference`,
      { intent_id: intentId, limit_bytes: LIMITS.stateBytes, actual_bytes: bytes },
    );
  }
}
