// The host half of the log panel for tests and the benchmark: the real LogStreamer (flow control by acks)
// over the real local tail of a file, posting into a PanelPage in order.
import type { PanelPage } from './harness';
import { LogStreamer } from '../../src/features/panels/logStreamer';
import type { LogStreamerOptions } from '../../src/features/panels/logStreamer';
import { LocalRunDataSource } from '../../src/features/panels/localRunSource';
import { logSignatures } from '../../src/features/panels/logSignatures';

export interface StreamingHost {
  readonly streamer: LogStreamer;
  readonly source: LocalRunDataSource;
  /** Resolves once every byte of the file up to `size` has been sent and acknowledged. */
  drained(size: number, timeoutMs?: number): Promise<void>;
  dispose(): void;
}

export async function streamFile(panel: PanelPage, path: string, opts: LogStreamerOptions = {}): Promise<StreamingHost> {
  const source = await new LocalRunDataSource({ log: path }, { pollMs: 50 }).start();
  let chain: Promise<void> = Promise.resolve();
  const streamer = new LogStreamer(
    source,
    (m) => {
      chain = chain.then(() => panel.post(m)).catch(() => undefined);
    },
    'output.log',
    logSignatures(),
    opts,
  );
  panel.onMessage = (m) => {
    if (m.type === 'ack' && typeof m.seq === 'number') streamer.ack(m.seq);
  };
  await streamer.start();
  return {
    streamer,
    source,
    async drained(size, timeoutMs = 300_000) {
      const t0 = Date.now();
      while (streamer.sentOffset < size || streamer.inFlightNow > 0) {
        if (Date.now() - t0 > timeoutMs) throw new Error(`not drained: sent ${streamer.sentOffset}/${size}, in flight ${streamer.inFlightNow}`);
        await new Promise((r) => setTimeout(r, 25));
      }
      await chain;
    },
    dispose() {
      streamer.dispose();
      source.dispose();
    },
  };
}
