import * as z from 'zod';
import { isKnownEventType } from '../../api/eventTypes.js';
import { boolParam, jsonArrayParam } from '../params.js';
import { AddressAllowList, refusedClass } from './webhookAddress.js';

/**
 * What a webhook subscription is given (POST and PATCH /webhooks), checked before anything is saved: a receiver's
 * URL (https://, or http:// with server.webhooks.allowHttp; not at a loopback, private, ... address written as
 * such, unless allowed), its event types (known ones, or "*"), its secret (32 to 256 characters).
 */

const typesParam = jsonArrayParam(z.string().max(64), { field: 'types', max: 100 })
  .refine((types) => types.length > 0, 'name at least one event type, or ["*"] for every type')
  .refine((types) => !types.includes('*') || types.length === 1, '"*" (every type) stands alone')
  .superRefine((types, ctx) => {
    const unknown = types.filter((t) => t !== '*' && !isKnownEventType(t));
    if (unknown.length > 0)
      ctx.addIssue({ code: 'custom', message: `unknown event type${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (docs/audit.md lists them)` });
  })
  .transform((types) => [...new Set(types)])
  .describe('the event types it receives (docs/audit.md, "Every event type"), or ["*"] for every type');

const secretParam = z
  .string()
  .min(32, 'must be at least 32 characters')
  .max(256, 'must be at most 256 characters')
  .describe('the HMAC-SHA256 key of its signatures, 32 to 256 characters');

const descriptionParam = z.string().trim().max(500, 'at most 500 characters').describe('what it is for, for the list');

/** The receiver's URL as server.webhooks takes it; a problem in words, or null. */
function urlProblem(text: string, options: { allowHttp: boolean; allow: AddressAllowList }): string | null {
  if (!URL.canParse(text)) return 'is not a URL (https://receiver.example.org/path)';
  const url = new URL(text);
  if (url.protocol === 'http:' && !options.allowHttp) return 'must be https:// (http:// needs server.webhooks.allowHttp)';
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `must be https://, not ${url.protocol}//`;
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password: the signature authenticates the service';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const words = refusedClass(host);
  if (words !== null && !options.allow.allows(host)) return `${host} is ${words}: refused unless server.webhooks.allowAddresses lists it`;
  return null;
}

/** The parameters of POST /webhooks and PATCH /webhooks/{id}, for this service's server.webhooks. */
export function webhookParams(options: { allowHttp: boolean; allowAddresses: readonly string[] }) {
  const allow = new AddressAllowList(options.allowAddresses);
  const url = z
    .string()
    .trim()
    .max(2000, 'at most 2000 characters')
    .superRefine((text, ctx) => {
      const problem = urlProblem(text, { allowHttp: options.allowHttp, allow });
      if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
    })
    .describe(`the receiver: https://${options.allowHttp ? ' (or http://)' : ''} URL to POST each delivery to`);
  return {
    create: z.object({
      url,
      types: typesParam,
      secret: secretParam
        .optional()
        .describe('the HMAC-SHA256 key, 32 to 256 characters; absent: one is made (32 random bytes, base64url) and answered this once'),
      description: descriptionParam.optional(),
    }),
    change: z.object({
      url: url.optional(),
      types: typesParam.optional(),
      secret: secretParam.optional(),
      description: descriptionParam.optional(),
      enabled: boolParam.optional().describe('false: nothing is sent to it (its deliveries wait); true: sent again'),
    }),
  };
}
