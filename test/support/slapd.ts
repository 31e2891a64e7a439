// A real slapd for the LDAP tests: the harness is the benchmark's too (the `ldap` benchmark), so it lives in
// bench/slapd.ts (tests may import bench/, bench never imports test/).
export { ldifGroup, ldifGroupOf, ldifPerson, peopleLdif, startSlapd, type LdifPerson, type Slapd, type SlapdOptions } from '../../bench/slapd.js';
