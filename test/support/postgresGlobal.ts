import type { TestProject } from 'vitest/node';
import { startPostgres, type PostgresCluster } from './postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's PostgreSQL cluster (the postgres project): each test file makes databases of its own in it. */
    postgres: { port: number; passwordFile: string; url: string };
  }
}

let cluster: PostgresCluster | undefined;

/** One PostgreSQL cluster for the postgres project's run (initdb once, not once per file); removed after. */
export async function setup(project: TestProject): Promise<void> {
  cluster = await startPostgres();
  project.provide('postgres', { port: cluster.port, passwordFile: cluster.passwordFile, url: cluster.url('postgres') });
}

export async function teardown(): Promise<void> {
  await cluster?.close();
}
