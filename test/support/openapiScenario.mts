// A client of the reference service written only from its OpenAPI document: `paths` are the types openapi-typescript
// generates from GET /openapi.json at test time (test/integration/serviceOpenApi.test.ts writes them beside this
// file's copy in a temporary directory and type-checks this file against them before running it), the client is
// openapi-fetch's. So every path, parameter name and body member here is one the document names, with its type.
// A .mts file: outside the repository's typecheck and lint (./serviceApi.js exists only in that directory).
import type { Client } from 'openapi-fetch';
import type { paths } from './serviceApi.js';

type Api = Client<paths>;

/** The answer's body, or a failure naming the call, its status and the service's error. */
function ok<T>(call: string, result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data === undefined) throw new Error(`${call}: ${result.response.status} ${JSON.stringify(result.error)}`);
  return result.data;
}

/** An answer that must be a refusal: its status and message. */
function refused(call: string, result: { data?: unknown; error?: { error: string }; response: Response }): { status: number; error: string } {
  if (result.error === undefined) throw new Error(`${call}: expected a refusal, got ${result.response.status}`);
  return { status: result.response.status, error: result.error.error };
}

/**
 * The operator's round through the API: users invited, listed, a card set, a suspension toggled, the directory read
 * whole and then since its revision; and once each of the other calls, refusals included. Returns what the test
 * checks.
 */
export async function operatorRound(api: Api, door: { resourceId: number; uuid: string }) {
  const invited = ok(
    'POST /invites',
    await api.POST('/invites', { body: { emails: ['ada@example.org', 'grace@example.org', 'not-an-address'], no_email: true } }),
  );
  const [ada, grace] = invited.add_ids;
  if (ada === undefined || grace === undefined) throw new Error(`POST /invites added ${JSON.stringify(invited.add_ids)}`);
  const listed = ok('GET /multipleusers', await api.GET('/multipleusers', { params: { query: { email: true } } }));

  ok('PUT /modifysmartcard', await api.PUT('/modifysmartcard', { body: { email_id: ada, smartcards: [{ number: '4213578', label: 'badge' }] } }));
  const cards = ok('GET /modifysmartcard', await api.GET('/modifysmartcard', { params: { query: { email_id: ada } } }));
  const suspended = ok('PUT /togglesuspension', await api.PUT('/togglesuspension', { body: { email_id: grace } }));
  const directory = ok('GET /directory', await api.GET('/directory', {}));
  const detail = ok('GET /user', await api.GET('/user', { params: { query: { email_id: ada } } }));

  // The rest of the API, once each.
  ok(
    'PUT /modifysmartcards',
    await api.PUT('/modifysmartcards', {
      body: {
        email_id: ada,
        smartcards: [
          { number: '4213578', label: 'badge' },
          { number: '2468', label: 'PIN' },
        ],
      },
    }),
  );
  ok('PUT /modifyallusernames', await api.PUT('/modifyallusernames', { body: { email_id: ada, computer_usernames: [{ computer_username: 'ada' }] } }));
  const adaListed = listed.find((u) => u.email_id === ada);
  if (adaListed?.user_id == null) throw new Error('GET /multipleusers: no user_id for ada');
  ok('PUT /modifyrank', await api.PUT('/modifyrank', { body: { admin_user_id: adaListed.user_id, rank: 'ADMIN' } }));
  const group = ok('POST /groups', await api.POST('/groups', { body: { type: 'users', name: 'Staff', add_ids: [ada] } }));
  ok('PUT /groups', await api.PUT('/groups', { body: { type: 'users', group_id: group.group_id, add_ids: [grace], del_ids: [ada] } }));
  const link = ok(
    'POST /magiclinkadmin',
    await api.POST('/magiclinkadmin', {
      body: {
        email_list: ['visitor@example.org'],
        resource_id_list: [door.resourceId],
        name: 'Visit',
        send_email: false,
        time_mapping: [[], [[9, 17]], [], [], [], [], []],
      },
    }),
  );
  const visitor = link.email_ids['visitor@example.org'];
  if (visitor === undefined) throw new Error('POST /magiclinkadmin: no email_id for the visitor');
  ok('PUT /promoteguest', await api.PUT('/promoteguest', { body: { email_id: visitor } }));
  const level = ok(
    'POST /policies',
    await api.POST('/policies', { body: { name: 'Day shift', resource_ids: [door.resourceId], schedule: { mon: ['08:00-18:00'] }, email_ids: [ada] } }),
  );
  ok('PUT /policies', await api.PUT('/policies', { body: { policy_id: level.policy_id, end_time: '2030-01-01 00:00:00' } }));
  const levels = ok('GET /policies', await api.GET('/policies', {}));
  const oneLevel = ok('GET /policies?policy_id', await api.GET('/policies', { params: { query: { policy_id: level.policy_id } } }));
  const since = ok(
    'GET /directory?since',
    await api.GET('/directory', { params: { query: { since: directory.revision, history: directory.history, tag: directory.tag } } }),
  );
  ok('DELETE /policies', await api.DELETE('/policies', { params: { query: { policy_id: level.policy_id } } }));
  ok('GET /lockdown', await api.GET('/lockdown', {}));
  ok('GET /status', await api.GET('/status', {}));
  ok('GET /healthz', await api.GET('/healthz', {}));
  ok('GET /openapi.json', await api.GET('/openapi.json', {}));
  const sources = ok('GET /identity-sources', await api.GET('/identity-sources', {}));
  ok('DELETE /user', await api.DELETE('/user', { params: { query: { email: 'visitor@example.org' } } }));

  const refusals = {
    unknownUser: refused('GET /user', await api.GET('/user', { params: { query: { email_id: 999_999 } } })),
    promoteUser: refused('PUT /promoteguest', await api.PUT('/promoteguest', { body: { email_id: ada } })),
    // No MQTT broker is configured for this service: the doors cannot be reached.
    lock: refused('POST /setlockstatus', await api.POST('/setlockstatus', { body: { uuid: door.uuid, lock_state: false, unlock_time: 5 } })),
    lockdown: refused('POST /lockdown', await api.POST('/lockdown', { body: { active: true, uuid: door.uuid } })),
    // Nor is an LDAP server (server.identity.ldap).
    ldapSync: refused('POST /identity-sources/ldap/sync', await api.POST('/identity-sources/ldap/sync', { body: {} })),
  };
  return {
    ada,
    invited: { added: invited.added, invalid: invited.invalid },
    listed: listed.map((u) => u.email),
    cards: cards.smartcards,
    suspended: suspended.success,
    directory: { full: directory.full, users: directory.users.map((u) => [u.email, u.ad_status]), cards: directory.details[String(ada)]?.smartcards },
    detail: detail.smartcards,
    sources: { local: sources.local.users, ldap: sources.ldap.enabled, source: listed.map((u) => u.source) },
    since: { full: since.full, users: since.users.map((u) => u.email) },
    levels,
    oneLevel,
    refusals,
  };
}
