/**
 * SCIM's errors (RFC 7644 section 3.12): every refusal under /scim/v2 is answered in the RFC's shape, with the
 * `scimType` the RFC names for it, so an identity provider shows the operator its reason.
 */

const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** The error types RFC 7644 names (table 9) that this endpoint answers. */
export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers';

/** A refused SCIM request: its HTTP status, the RFC's error type when it names one, and what to change. */
export class ScimError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly scimType?: ScimType,
  ) {
    super(detail);
  }
}

/** A 400 with its type: the usual refusal of a request's content. */
export const badScim = (scimType: ScimType, detail: string) => new ScimError(400, detail, scimType);

/** The RFC's error body; `status` is a string there (section 3.12). */
export function scimErrorBody(error: ScimError): Record<string, unknown> {
  const body: Record<string, unknown> = { schemas: [ERROR_SCHEMA], status: String(error.status), detail: error.detail };
  if (error.scimType !== undefined) body.scimType = error.scimType;
  return body;
}
