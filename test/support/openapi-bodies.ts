import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";

type Operation = { operationId?: string; requestBody?: { required?: boolean; content?: Record<string, { schema?: unknown }> } };
type Document = { paths: Record<string, Record<string, Operation>>; components?: Record<string, unknown> };

/**
 * Checks request bodies against the request schema an OpenAPI document gives their operation, as
 * a client generator fed /openapi.json would build them: ajv (JSON Schema 2020-12, the dialect of
 * OpenAPI 3.1) over the document's own schema, its `#/components` references included. Formats
 * are not checked (the contracts check them; the document only names them).
 */
export function requestBodyChecker(document: unknown): (operationId: string, body: unknown) => string | undefined {
  const doc = document as Document;
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false, validateSchema: false });
  const operations = new Map<string, Operation>();
  for (const methods of Object.values(doc.paths)) for (const op of Object.values(methods)) if (op.operationId) operations.set(op.operationId, op);
  const compiled = new Map<string, ValidateFunction | null>();
  return (operationId, body) => {
    const op = operations.get(operationId);
    if (!op) return `the document has no operation ${operationId}`;
    if (!compiled.has(operationId)) {
      const schema = op.requestBody?.content?.["application/json"]?.schema;
      // The components travel with each body's schema, so its #/components/... references resolve.
      compiled.set(operationId, schema ? ajv.compile({ ...(schema as object), components: doc.components }) : null);
    }
    const validate = compiled.get(operationId);
    if (!validate) return `${operationId} documents no request body`;
    if (validate(body)) return undefined;
    const error = validate.errors?.[0];
    return `${operationId}: the body does not match its documented request schema: ${error?.instancePath || "(body)"} ${error?.message ?? ""} ${error?.params ? JSON.stringify(error.params) : ""}`.trim();
  };
}
