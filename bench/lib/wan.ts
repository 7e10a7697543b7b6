// The link the *-wan benchmarks shape: 40 ms round trip at 1 Gbit/s by default, a user on a good connection
// to a cloud region a continent away (RFT_BENCH_RTT_MS, RFT_BENCH_MBIT to change).
import type { ShapingOptions } from '../../test/support/shapingProxy';

export function wanLink(): ShapingOptions {
  return { rttMs: Number(process.env.RFT_BENCH_RTT_MS ?? 40), bitsPerSecond: Number(process.env.RFT_BENCH_MBIT ?? 1000) * 1e6 };
}
