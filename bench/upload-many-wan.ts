// `npm run bench -- upload-many-wan`: the first sync of 10,000 files (100 MB) through the shaping proxy,
// 40 ms RTT at 1 Gbit/s (lib/wan.ts), ours vs `rsync -a` (A B pairs) and `scp -r` (once, at most 300 s).
// Goal: half rsync's time or less (2x).
import { uploadManyBench } from './upload-many';
import { wanLink } from './lib/wan';

void uploadManyBench({ name: 'upload-many-wan', wan: wanLink(), goal: '<= 0.5', scpLimitS: Number(process.env.RFT_BENCH_SCP_R_LIMIT_S ?? 300) }).catch(
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
