import { z } from "zod";
import { extendZodWithOpenApi } from "@asteasolutions/zod-to-openapi";

// Every schema in this package can describe itself in the generated OpenAPI document.
extendZodWithOpenApi(z);

export { z };
