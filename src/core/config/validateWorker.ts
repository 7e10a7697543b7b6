// Worker-thread entry (dist/configWorker.js): the full check of a document too big for the full YAML
// parser to run on the editor's thread (see backgroundValidator.ts). Reads neighbouring files from disk.
import { parentPort } from 'node:worker_threads';
import { validateText } from './validate';
import { localFiles } from './nodeFiles';
import { MAX_CHECKED_BYTES } from './text';
import type { BackgroundRequest, BackgroundReply } from './backgroundValidator';

parentPort?.on('message', (m: BackgroundRequest) => {
  let reply: BackgroundReply;
  try {
    reply = {
      id: m.id,
      result: validateText(m.text, { fileName: m.fileName, files: localFiles(m.roots.length > 0 ? m.roots : undefined), libraryParseLimit: MAX_CHECKED_BYTES }),
    };
  } catch (e) {
    reply = { id: m.id, error: e instanceof Error ? e.message : String(e) };
  }
  parentPort!.postMessage(reply);
});
