import type { SyncRunAnswer } from '../../../api/identity.js';

/**
 * What the routes and the console ask of the LDAP sync (POST /identity-sources/ldap/sync): a sync now, in this
 * process. The scheduled syncs run by themselves in the process that publishes to the broker.
 */
export interface LdapSyncControl {
  /**
   * Runs one sync now and resolves with its run as GET /identity-sources shows it (ok, failed or held: the run says
   * which). `trigger` is who asked (callerOf). `confirmSuspensions`: the operator saw a held sync and allows this many
   * suspensions and removals. Rejects with a 409 BadRequest while another sync runs, in any process.
   */
  runNow(request: { trigger: string; confirmSuspensions?: number }): Promise<SyncRunAnswer>;
}
