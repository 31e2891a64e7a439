import { afterEach, describe, expect, it } from 'vitest';
import { ChardevGpio, resolveChip } from '../../src/hardware/chardev/chardevGpio.js';
import type { PinEdge } from '../../src/hardware/gpio.js';
import { DoorAgentError } from '../../src/util/errors.js';
import { tempDir } from '../support/cli.js';
import { FakeChardev } from '../support/fakeChardev.js';

const dirs: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of dirs.splice(0)) cleanup();
});

// Raspberry Pi 5, kernel 6.6+: the header's RP1 is gpiochip0 on recent kernels, the SoC's own controllers follow.
const PI5 = {
  gpiochip0: { name: 'gpiochip0', label: 'pinctrl-rp1', lines: 54 },
  gpiochip10: { name: 'gpiochip10', label: 'gpio-brcmstb@107d508500', lines: 32 },
  gpiochip11: { name: 'gpiochip11', label: 'gpio-brcmstb@107d508520', lines: 4 },
  gpiochip12: { name: 'gpiochip12', label: 'gpio-brcmstb@107d517c00', lines: 17 },
  gpiochip13: { name: 'gpiochip13', label: 'pinctrl-bcm2712', lines: 6 },
};
// Raspberry Pi 4: the SoC's controller and the firmware's expander.
const PI4 = {
  gpiochip0: { name: 'gpiochip0', label: 'pinctrl-bcm2711', lines: 58 },
  gpiochip1: { name: 'gpiochip1', label: 'raspberrypi-exp-gpio', lines: 8 },
};

function setup(chips: Record<string, { name: string; label: string; lines: number }> = PI4, chip = 'auto') {
  const dev = tempDir('door-agent-dev-');
  dirs.push(dev.cleanup);
  const kernel = new FakeChardev(dev.path, chips);
  return { kernel, gpio: new ChardevGpio(kernel, chip, dev.path), dev: dev.path };
}

describe('chip resolution', () => {
  it('auto finds the pin controller, so BCM numbers are line offsets on a Pi 4 and on a Pi 5 alike', () => {
    expect(setup(PI4).gpio.chip).toMatchObject({ name: 'gpiochip0', label: 'pinctrl-bcm2711' });
    // On the Pi 5 the RP1 wins over the SoC's pinctrl-bcm2712.
    expect(setup(PI5).gpio.chip).toMatchObject({ name: 'gpiochip0', label: 'pinctrl-rp1' });
    const { gpiochip0: _rp1, ...soc } = PI5;
    const older = { ...soc, gpiochip4: { name: 'gpiochip4', label: 'pinctrl-rp1', lines: 54 } };
    expect(setup(older).gpio.chip.path).toMatch(/gpiochip4$/); // kernels before 6.6.y numbered it 4
  });

  it('takes a label, a name or a device path', () => {
    const { kernel, dev } = setup(PI5);
    expect(resolveChip(kernel, 'pinctrl-bcm2712', dev).name).toBe('gpiochip13');
    expect(resolveChip(kernel, 'gpiochip10', dev).label).toBe('gpio-brcmstb@107d508500');
    expect(resolveChip(kernel, `${dev}/gpiochip0`, dev).label).toBe('pinctrl-rp1');
  });

  it('names the chips it found when none matches, and the ones it could not open', () => {
    const { kernel, dev } = setup({
      gpiochip0: { name: 'gpiochip0', label: 'gpio-mockup-A', lines: 8 },
      gpiochip1: { name: 'gpiochip1', label: 'x', lines: 1 },
    });
    kernel.denied.add(`${dev}/gpiochip1`);
    expect(() => resolveChip(kernel, 'auto', dev)).toThrow(
      /no GPIO chip labelled pinctrl-\*.*gpiochip0 "gpio-mockup-A" \(8 lines\).*cannot read .*gpiochip1: EACCES.*Set gpio.chip/,
    );
    expect(() => resolveChip(kernel, 'pinctrl-rp1', dev)).toThrow(DoorAgentError);
  });
});

describe('outputs', () => {
  it('claims a relay line with its level in the request itself: no write happens before, so no glitch', () => {
    const { kernel, gpio } = setup();
    const relay = gpio.openOutput(17, 1);
    expect(kernel.log).toEqual([`request output 17 values 1 fd 100`]);
    expect(relay.read()).toBe(1);
    relay.write(0);
    expect(relay.read()).toBe(0);
    expect(kernel.log.at(-1)).toBe('set fd 100 0');
  });

  it('says who holds a busy line, and what to do', () => {
    const { kernel, gpio, dev } = setup();
    kernel.foreign.set(`${dev}/gpiochip0:17`, 'gpio-fan');
    expect(() => gpio.openOutput(17, 0)).toThrow(/GPIO 17 \(output\).*EBUSY.*GPIO 17 is held by "gpio-fan".*gpioinfo/);
  });

  it('refuses a pin the chip does not have, naming its range', () => {
    expect(() => setup().gpio.openOutput(60, 0)).toThrow(/GPIO 60 \(output\): gpiochip0 "pinctrl-bcm2711" has lines 0-57 only/);
  });

  it('points at the gpio group when the device is not accessible', () => {
    const { kernel, gpio, dev } = setup();
    expect(gpio.chip.label).toBe('pinctrl-bcm2711');
    kernel.denied.add(`${dev}/gpiochip0`);
    expect(() => gpio.openOutput(17, 0)).toThrow(/EACCES.*gpio group/);
  });

  it('releases every line at close, and refuses writes after', () => {
    const { kernel, gpio } = setup();
    const relay = gpio.openOutput(17, 0);
    gpio.openInput(27, () => {}, 1, 'up');
    gpio.close();
    expect(kernel.held.size).toBe(0);
    expect(() => relay.write(1)).toThrow(/after the driver was closed/);
    // A new driver (a restart in the same process, a test) can claim them again.
    expect(() => gpio.openOutput(17, 0)).not.toThrow();
  });
});

describe('inputs', () => {
  it('asks for the bias and both edges, and reports the level after each batch of edges', () => {
    const { kernel, gpio } = setup();
    const levels: number[] = [];
    const input = gpio.openInput(22, (level) => levels.push(level), 1, 'up');
    const fd = kernel.fdOf(22);
    expect(kernel.held.get(fd)!.request).toMatchObject({ direction: 'input', bias: 'pull-up', edges: true, offsets: [22] });
    kernel.edges(fd, [{ offset: 22, rising: false, atUs: 10 }]);
    kernel.edges(fd, [
      { offset: 22, rising: true, atUs: 20 },
      { offset: 22, rising: false, atUs: 30 },
    ]);
    expect(levels).toEqual([0, 0]);
    expect(input.read()).toBe(0);
    input.close();
    expect(kernel.held.has(fd)).toBe(false);
  });

  it('pull none leaves the bias as the firmware set it (a config.txt pull-up stays after a move from onoff)', () => {
    const { kernel, gpio } = setup();
    gpio.openInput(23, () => {}, 0, 'none');
    gpio.openInput(24, () => {}, 0, 'down');
    expect(kernel.held.get(kernel.fdOf(23))!.request.bias).toBe('as-is');
    expect(kernel.held.get(kernel.fdOf(24))!.request.bias).toBe('pull-down');
  });

  it('claims a Wiegand pair in one request with a deep queue, and hands on its edges in kernel order with their times', () => {
    const { kernel, gpio } = setup(PI5);
    const batches: PinEdge[][] = [];
    const edges = gpio.openEdgeInputs([5, 6], 'up', (e) => batches.push([...e]));
    const fd = kernel.fdOf(5);
    expect(kernel.fdOf(6)).toBe(fd);
    expect(kernel.held.get(fd)!.request).toMatchObject({ offsets: [5, 6], bias: 'pull-up', edges: true, eventBufferSize: 1024 });
    kernel.edges(fd, [
      { offset: 6, rising: false, atUs: 1000 },
      { offset: 6, rising: true, atUs: 1050 },
      { offset: 5, rising: false, atUs: 3000 },
    ]);
    kernel.edges(fd, [{ offset: 5, rising: true, atUs: 3050 }], { skip: 2 });
    expect(batches).toEqual([
      [
        { pin: 6, rising: false, atUs: 1000, afterLoss: false },
        { pin: 6, rising: true, atUs: 1050, afterLoss: false },
        { pin: 5, rising: false, atUs: 3000, afterLoss: false },
      ],
      [{ pin: 5, rising: true, atUs: 3050, afterLoss: true }],
    ]);
    expect(edges.levels()).toEqual([1, 1]); // both lines back high after their pulses, read from the kernel
    // The edges' clock is CLOCK_MONOTONIC in µs, as the kernel stamps them.
    expect(Math.abs(edges.nowUs() - Number(process.hrtime.bigint() / 1000n))).toBeLessThan(1_000_000);
    edges.close();
    expect(kernel.held.size).toBe(0);
  });
});
