import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";

/**
 * GitHub's published REST description (`@octokit/openapi`, api.github.com) as JSON Schema
 * validators: the response schema of an operation and status, looked up by method and path.
 */
type Spec = {
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, Response> }>>;
  components: { schemas: Record<string, unknown>; responses: Record<string, Response> };
};
type Response = { $ref?: string; content?: Record<string, { schema?: unknown }> };

const require = createRequire(import.meta.url);
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/**
 * OpenAPI 3.0 says a nullable schema with `nullable: true`; JSON Schema says it with a null
 * alternative. Converted recursively so Ajv reads the schemas as GitHub means them.
 */
function toJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (!node || typeof node !== "object") return node;
  const { nullable, ...rest } = node as Record<string, unknown>;
  const converted = Object.fromEntries(
    Object.entries(rest)
      .map(([k, v]) => [k, k === "example" || k === "examples" ? undefined : toJsonSchema(v)])
      .filter(([, v]) => v !== undefined),
  );
  return nullable === true ? { anyOf: [{ type: "null" }, converted] } : converted;
}

export interface Operation {
  operationId: string;
  /** The path template it was matched to, e.g. /repos/{owner}/{repo}/pulls/{pull_number}. */
  template: string;
}

export interface ResponseCheck {
  /** Which description the body was checked against: the operation's own, or GitHub's shared one for the status. */
  against: string;
  errors: string[];
}

export class GithubOpenApi {
  private readonly spec: Spec;
  private readonly ajv: Ajv;
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly templates: { template: string; pattern: RegExp }[];

  constructor() {
    const raw = JSON.parse(readFileSync(require.resolve("@octokit/openapi/generated/api.github.com.json"), "utf8")) as Spec;
    this.spec = raw;
    this.ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: "github", components: { schemas: toJsonSchema(raw.components.schemas) } }, "github");
    this.templates = Object.keys(raw.paths)
      .filter((t) => raw.paths[t]!.get)
      .map((template) => ({ template, pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`) }))
      // The most literal template first: /repos/{owner}/{repo}/pulls before /repos/{owner}/{repo}/{x}.
      .sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
  }

  /** The GET operation a request path is, with GitHub's `/repositories/{id}/...` pagination form read as `/repos/{owner}/{repo}/...`. */
  operation(path: string): Operation | undefined {
    const plain = path.split("?")[0]!.replace(/^\/repositories\/\d+/, "/repos/owner/repo");
    const hit = this.templates.find((t) => t.pattern.test(plain));
    return hit ? { operationId: this.spec.paths[hit.template]!.get!.operationId, template: hit.template } : undefined;
  }

  /** Whether the operation documents this status itself. */
  documents(operation: Operation, status: number): boolean {
    return String(status) in this.spec.paths[operation.template]!.get!.responses;
  }

  /**
   * Checks a body against the operation's response for the status, or, when the operation does not
   * list that status (a rate limit can answer any request), GitHub's shared response for it.
   */
  check(operation: Operation, status: number, body: unknown): ResponseCheck {
    // Statuses any request can meet (a conditional hit, a rate limit, a missing parent, a server
    // error). A 301 or a 410 is a property of the resource: it must be the operation's own.
    const shared: Record<number, string> = { 304: "not_modified", 403: "forbidden", 404: "not_found", 500: "internal_error", 503: "service_unavailable" };
    let response = this.spec.paths[operation.template]!.get!.responses[String(status)];
    let against = `${operation.operationId} ${status}`;
    if (!response) {
      // GitHub documents secondary limits' 429 in prose only; its body is the basic error.
      if (status === 429) return this.validate("basic-error", body, `basic-error (429 is not in the description; GitHub documents it in prose)`);
      const name = shared[status];
      if (!name)
        return {
          against: `${operation.operationId} ${status}`,
          errors: [`status ${status} is neither documented for ${operation.operationId} nor a shared GitHub response`],
        };
      response = { $ref: `#/components/responses/${name}` };
      against = `components/responses/${name} (shared)`;
    }
    if (response.$ref) response = this.spec.components.responses[response.$ref.split("/").pop()!]!;
    const schema = response.content?.["application/json"]?.schema as { $ref?: string } | undefined;
    if (!schema) return { against, errors: body === undefined || body === "" ? [] : ["the description has no body for this status, but one was sent"] };
    const key = JSON.stringify(schema);
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = this.ajv.compile(rebase(toJsonSchema(schema)) as object);
      this.compiled.set(key, validate);
    }
    return { against, errors: validate(body) ? [] : (validate.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || "/"} ${e.message}`) };
  }

  private validate(name: string, body: unknown, against: string): ResponseCheck {
    const validate = this.ajv.getSchema(`github#/components/schemas/${name}`)!;
    return { against, errors: validate(body) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`) };
  }
}

/** Points the description's local references at the schema document added as "github". */
function rebase(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rebase);
  if (!node || typeof node !== "object") return node;
  return Object.fromEntries(
    Object.entries(node as Record<string, unknown>).map(([k, v]) => [
      k,
      k === "$ref" && typeof v === "string" && v.startsWith("#/") ? `github${v}` : rebase(v),
    ]),
  );
}
