import type { DirectoryLevel, ResourceGroup } from '../api/shapes.js';
import type { Db } from './database.js';
import { readMetaText, writeMeta } from './meta.js';

/**
 * The access levels and resource groups the service defines (GET /directory `levels`, `resource_groups`), as
 * validated by the sync that brought them and written in the same transaction as the users they go with. null:
 * the service defines none (an answer without them, or a service without GET /directory): the config's levels
 * alone apply.
 */
export interface ServiceLevels {
  levels: DirectoryLevel[];
  resourceGroups: ResourceGroup[];
}

const KEY = 'service_levels';

export function readServiceLevels(db: Db): ServiceLevels | null {
  return serviceLevelsOf(serviceLevelsText(db));
}

/** The stored text (serviceLevelsText) as the levels it holds. */
export function serviceLevelsOf(text: string | undefined): ServiceLevels | null {
  return text === undefined ? null : (JSON.parse(text) as ServiceLevels | null);
}

/** The stored text, to tell cheaply whether it changed since it was last read. */
export function serviceLevelsText(db: Db): string | undefined {
  return readMetaText(db, KEY);
}

/** Written only when it changed (gentle on the SD card); returns whether it did. */
export function writeServiceLevels(db: Db, value: ServiceLevels | null): boolean {
  const text = JSON.stringify(value);
  const held = serviceLevelsText(db);
  if (held === text || (held === undefined && value === null)) return false;
  writeMeta(db, KEY, value);
  return true;
}
