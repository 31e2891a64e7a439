/**
 * The floor of the MQTT command-to-relay benchmark: a bare mqtt.js client in a process of its own, connected and
 * subscribed as the agent is (MQTT 5, no Nagle delay, QoS 1, retain as published), that flips a value file the way
 * the simulated relay is written (in place) for every message. No parsing, no door, no database.
 *   node dist/bench/floorSubscriber.js URL TOPIC VALUE_FILE
 */
import { openSync, writeSync } from 'node:fs';
import { connectAsync } from 'mqtt';

const [url, topic, valueFile] = process.argv.slice(2);
if (!url || !topic || !valueFile) throw new Error('usage: floorSubscriber.js URL TOPIC VALUE_FILE');
const fd = openSync(valueFile, 'r+');
let level = 0;
const client = await connectAsync(url, { protocolVersion: 5, reconnectPeriod: 0 });
(client.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
client.on('message', () => {
  level = 1 - level;
  writeSync(fd, level === 1 ? '1\n' : '0\n', 0);
});
await client.subscribeAsync(topic, { qos: 1, rap: true });
process.stdout.write('ready\n');
process.on('SIGTERM', () => void client.endAsync().then(() => process.exit(0)));
