import { describe, expect, it } from 'vitest';
import {
  restrictLevels,
  restrictiveRemovalsAllowed,
  restrictUser,
  type ServiceLevelFacts,
  type ServiceLevelsFacts,
  type UserFacts,
} from '../../src/core/restrictions.js';

// Issue 51 item 9: the restrictive part of an answer the mass-removal guard refused, judged against the cache.
const JAN = Date.UTC(2026, 0, 1);
const MAR = Date.UTC(2026, 2, 1);
const JUN = Date.UTC(2026, 5, 1);

const held: UserFacts = {
  email: 'ann@example.org',
  tag: 'USER',
  adStatus: 'ACTIVE',
  groups: ['Staff', 'Lab'],
  policies: ['Front desk'],
  credentials: [
    { number: '100', validFrom: null, validUntil: null },
    { number: '101', validFrom: JAN, validUntil: JUN },
  ],
};
const answer = (changes: Partial<UserFacts>): UserFacts => Object.assign({}, held, changes);
const on = { removeCredentials: true };

describe('restrictUser: what of the answer takes access away from a user the door holds', () => {
  it('the same facts restrict nothing', () => {
    expect(restrictUser(held, answer({}), on)).toBeNull();
  });

  it('a suspension applies; a reinstatement waits', () => {
    expect(restrictUser(held, answer({ adStatus: 'SUSPENDED' }), on)).toMatchObject({ adStatus: 'SUSPENDED', suspended: true, narrowed: false });
    expect(restrictUser(answer({ adStatus: 'SUSPENDED' }), held, on)).toBeNull();
  });

  it('groups and policies lost apply, the ones gained wait; USER to GUEST applies, GUEST to USER waits', () => {
    const r = restrictUser(held, answer({ groups: ['Lab', 'Admins'], policies: [] }), on);
    expect(r).toMatchObject({ groups: ['Lab'], policies: [], narrowed: true, suspended: false, adStatus: 'ACTIVE' });
    expect(restrictUser(held, answer({ groups: ['Staff', 'Lab', 'Admins'] }), on)).toBeNull();
    expect(restrictUser(held, answer({ tag: 'GUEST' }), on)).toMatchObject({ tag: 'GUEST', narrowed: true });
    expect(restrictUser(answer({ tag: 'GUEST' }), held, on)).toBeNull();
  });

  it('a card taken away is removed (unless removals wait); one added waits; validity only ever shortens', () => {
    const r = restrictUser(
      held,
      answer({
        credentials: [
          { number: '101', validFrom: MAR, validUntil: null },
          { number: '102', validFrom: null, validUntil: null },
        ],
      }),
      on,
    );
    expect(r).toMatchObject({ removed: ['100'], shortened: [{ number: '101', validFrom: MAR, validUntil: JUN }] });
    expect(restrictUser(held, answer({ credentials: [held.credentials[1]!] }), { removeCredentials: false })).toBeNull();
    const wider = answer({ credentials: [held.credentials[0]!, { number: '101', validFrom: null, validUntil: null }] });
    expect(restrictUser(held, wider, on)).toBeNull();
  });

  it('another person under the same email_id (a restored service issues ids again): nothing applies', () => {
    expect(restrictUser(held, answer({ email: 'fay@example.org', adStatus: 'SUSPENDED', credentials: [] }), on)).toBeNull();
    expect(restrictUser(held, answer({ email: 'ANN@example.org', adStatus: 'SUSPENDED' }), on)).toMatchObject({ suspended: true });
  });
});

describe('restrictiveRemovalsAllowed: the restrictive part is no back door for a mass removal', () => {
  it('within the ratio, or allowed by the operator', () => {
    expect(restrictiveRemovalsAllowed(1, 10, 0.5)).toBe(true);
    expect(restrictiveRemovalsAllowed(5, 10, 0.5)).toBe(true);
    expect(restrictiveRemovalsAllowed(6, 10, 0.5)).toBe(false);
    expect(restrictiveRemovalsAllowed(10, 10, null)).toBe(true);
    expect(restrictiveRemovalsAllowed(0, 0, 0.5)).toBe(true);
  });
});

describe("restrictLevels: the service's levels narrowed by the answer's", () => {
  const desk: ServiceLevelFacts = {
    name: 'Front desk',
    resource_ids: [12, 13],
    resource_group: null,
    schedule: { mon: ['07:00-19:00'], tue: ['22:00-06:00'] },
    start_time: '2026-01-01 00:00:00',
    end_time: null,
  };
  const levels = (list: ServiceLevelFacts[], groups: ServiceLevelsFacts['resourceGroups'] = []): ServiceLevelsFacts => ({
    levels: list,
    resourceGroups: groups,
  });

  it('the same or wider: the held value itself, nothing narrowed; a level only the answer has waits', () => {
    const heldLevels = levels([desk]);
    const wider = Object.assign({}, desk, { resource_ids: [12, 13, 14], schedule: null, start_time: null });
    expect(restrictLevels(heldLevels, levels([wider, Object.assign({}, desk, { name: 'New' })]))).toEqual({ levels: heldLevels, narrowed: 0 });
    expect(restrictLevels(null, levels([desk]))).toEqual({ levels: null, narrowed: 0 });
  });

  it('a level dropped goes; doors, dates and schedules keep what both give', () => {
    expect(restrictLevels(levels([desk]), levels([]))).toEqual({ levels: levels([]), narrowed: 1 });
    expect(restrictLevels(levels([desk]), null)).toEqual({ levels: levels([]), narrowed: 1 });
    const narrower = Object.assign({}, desk, {
      resource_ids: [13, 40],
      schedule: { mon: ['12:00-20:00'], tue: ['23:00-05:00'], wed: ['08:00-09:00'], holidays: 'open' },
      start_time: '2026-03-01 00:00:00',
      end_time: '2026-06-01 00:00:00',
    });
    const r = restrictLevels(levels([desk]), levels([narrower]));
    expect(r.narrowed).toBe(1);
    expect(r.levels!.levels).toEqual([
      {
        name: 'Front desk',
        resource_ids: [13],
        // The overnight range is written as a range per day; holidays closed as the held schedule says.
        schedule: { holidays: 'closed', mon: ['12:00-19:00'], tue: ['23:00-24:00'], wed: ['00:00-05:00'] },
        start_time: '2026-03-01 00:00:00',
        end_time: '2026-06-01 00:00:00',
      },
    ]);
  });

  it('nothing left of a level (no common minute, dates that do not meet): it goes', () => {
    const never = Object.assign({}, desk, { schedule: { sat: ['10:00-11:00'] } });
    expect(restrictLevels(levels([desk]), levels([never])).levels!.levels).toEqual([]);
    const ended = Object.assign({}, desk, { end_time: '2025-06-01 00:00:00' });
    expect(restrictLevels(levels([desk]), levels([ended])).levels!.levels).toEqual([]);
  });

  it('resource groups: dropped or with fewer doors', () => {
    const groups = [
      { name: 'Ground floor', resource_ids: [12, 13] },
      { name: 'Lab', resource_ids: [40] },
    ];
    const r = restrictLevels(levels([], groups), levels([], [{ name: 'Ground floor', resource_ids: [13, 14] }]));
    expect(r).toEqual({ levels: levels([], [{ name: 'Ground floor', resource_ids: [13] }]), narrowed: 2 });
  });
});
