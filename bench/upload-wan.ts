// `npm run bench -- upload-wan`: the upload bench (one 1 GiB file, ours vs scp) through the shaping proxy,
// 40 ms RTT at 1 Gbit/s (lib/wan.ts), where one SSH channel is capped by its window. Goal: 2× scp.
import { uploadBench } from './upload';
import { wanLink } from './lib/wan';

void uploadBench({ name: 'upload-wan', wan: wanLink(), goal: '>= 2.0' }).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
