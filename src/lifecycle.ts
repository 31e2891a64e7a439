import type { Logger } from 'pino';

/** A part of a program with a start and a stop (the store, a door, MQTT, sync, the watchdog). */
export interface Component {
  readonly name: string;
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
}

/**
 * Starts `components` in order. If one fails, the ones already started are stopped in reverse order and the
 * error is thrown; otherwise returns a function that stops them all in reverse order (every stop is attempted,
 * a failing one is logged).
 */
export async function startInOrder(components: readonly Component[], logger: Logger): Promise<() => Promise<void>> {
  const started: Component[] = [];
  const stopAll = async () => {
    for (const component of started.splice(0).reverse()) {
      try {
        await component.stop();
      } catch (err) {
        logger.error({ err, component: component.name }, 'error while stopping');
      }
    }
  };
  for (const component of components) {
    try {
      await component.start();
    } catch (err) {
      logger.debug({ component: component.name }, 'start failed: stopping what started');
      await stopAll();
      throw err;
    }
    started.push(component);
  }
  return stopAll;
}
