import { isIP } from 'node:net';
import * as z from 'zod';
import { wholeNumber } from '../api/wholeNumber.js';
import { isLoopbackHost } from './loopbackHost.js';
import { SYSLOG_FACILITIES } from '../protocol/syslog.js';

/**
 * The evidence's settings (docs/audit.md): the SIEM export (`syslog` for the agent, `server.syslog` for the
 * service), the service's keeping of events (`server.audit`) and its webhooks (`server.webhooks`).
 */

const SYSLOG_URL = /^(tls|tcp):\/\/(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/;

export const syslogSchema = z
  .strictObject({
    /** tls://HOST[:PORT] (RFC 5425, default port 6514), or tcp://HOST:PORT for a receiver on this machine. */
    url: z
      .string()
      .regex(SYSLOG_URL, 'must be tls://HOST[:PORT] (or tcp://127.0.0.1:PORT for a receiver on this machine)')
      .refine((url) => {
        const [, scheme, host] = SYSLOG_URL.exec(url) ?? [];
        return scheme !== 'tcp' || isLoopbackHost(host ?? '');
      }, 'tcp:// sends audit events in clear text: only to a loopback address; use tls:// for another host')
      .refine((url) => {
        const [, scheme, , port] = SYSLOG_URL.exec(url) ?? [];
        return scheme === 'tls' || port !== undefined;
      }, 'tcp:// needs a port (tcp://127.0.0.1:514)'),
    /** The CA that signed the receiver's certificate: only a certificate it signed is taken (else the system's CAs). */
    caFile: z.string().min(1).optional(),
    /** A client certificate and its key, for a receiver that asks for one (both or neither). */
    certFile: z.string().min(1).optional(),
    keyFile: z.string().min(1).optional(),
    /** The name the receiver's certificate must carry, when not the URL's host. */
    serverName: z.string().min(1).max(253).describe("the name the receiver's certificate must carry, when not the URL's host").optional(),
    format: z.enum(['rfc5424', 'json']).default('rfc5424'),
    facility: z.enum(SYSLOG_FACILITIES).default('authpriv'),
    /** The private enterprise number in the SD-IDs (`meta@N`); 32473 is RFC 5612's, for documentation and sites without one. */
    enterpriseId: wholeNumber().min(1).max(4_294_967_295).default(32473),
    /** The HOSTNAME field; default: the agent's id (agent) or the machine's host name (service). */
    hostname: z
      .string()
      .regex(/^[!-~]{1,255}$/, 'printable ASCII without spaces, at most 255 characters')
      .optional(),
  })
  .superRefine((syslog, ctx) => {
    if ((syslog.certFile === undefined) !== (syslog.keyFile === undefined)) {
      ctx.addIssue({ code: 'custom', path: [syslog.certFile === undefined ? 'certFile' : 'keyFile'], message: 'certFile and keyFile go together' });
    }
    if (syslog.url.startsWith('tcp:') && (syslog.caFile ?? syslog.certFile ?? syslog.serverName) !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'caFile, certFile and serverName need a tls:// URL' });
    }
  });

/** An IPv4 or IPv6 network, `A.B.C.D/N` or `X::Y/N` (a bare address: that address alone). */
const cidr = z.string().refine((value) => {
  const [address = '', bits, ...rest] = value.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  const n = Number(bits);
  return /^\d{1,3}$/.test(bits) && n <= (family === 4 ? 32 : 128);
}, 'must be an address or a network (127.0.0.1/32, 10.0.0.0/8, ::1/128)');

export const auditServerSchema = z.strictObject({
  /** The broker client id of this process's events session (persistent); default door-agent-service-events-HOST-PORT. */
  clientId: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,128}$/, 'letters, digits, ".", "-" or "_", at most 128')
    .optional(),
  /** Events older than this many days are deleted once a day; absent: every event is kept. */
  retentionDays: wholeNumber().min(1).max(36_500).optional(),
  /** A sequence number missing this long while later ones have come is a gap, logged and shown. */
  gapSeconds: wholeNumber().min(10).max(86_400).default(300),
  /** The longest date range a report takes. */
  maxReportDays: wholeNumber().min(1).max(3660).default(366),
});

export const webhooksServerSchema = z.strictObject({
  /** Addresses a receiver may resolve to although loopback, private or link-local (no SSRF otherwise). */
  allowAddresses: z.array(cidr).default([]),
  /** Receivers on http:// (no TLS) are taken; off: https:// only. */
  allowHttp: z.boolean().default(false),
  /** A delivery not taken within this many hours of the event is marked failed. */
  retryHours: wholeNumber().min(1).max(168).default(24),
  /** A receiver that has not answered in this many seconds has failed this attempt. */
  timeoutSeconds: wholeNumber().min(1).max(60).default(10),
});
