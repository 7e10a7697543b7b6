// Issue 39.2 (log panel): which traceback frames the log page makes links of. Only paths in the run's synced
// workspace folder on the host, or relative to it; the extension checks each path again before opening it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { traceLinks } from '../../../webview/src/log/traceLinks';

test('a frame in the synced workspace is a link over its path and line; libraries and other folders are not', () => {
  const folder = 'my_project-1a2b3c4d';
  const line = `  File "/home/ubuntu/.remote-finetune/workspaces/${folder}/lib/helper.py", line 3, in check`;
  const links = traceLinks(line, folder);
  assert.equal(links.length, 1);
  assert.equal(links[0]!.path, `/home/ubuntu/.remote-finetune/workspaces/${folder}/lib/helper.py`);
  assert.equal(links[0]!.line, 3);
  assert.equal(line.slice(links[0]!.start, links[0]!.end), `"/home/ubuntu/.remote-finetune/workspaces/${folder}/lib/helper.py", line 3`);
  assert.deepEqual(
    traceLinks('  File "train.py", line 10, in <module>', folder).map((l) => [l.path, l.line]),
    [['train.py', 10]],
  );
  assert.deepEqual(traceLinks('  File "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", line 1736, in _call_impl', folder), []);
  assert.deepEqual(traceLinks('  File "/home/u/.remote-finetune/workspaces/other-00000000/train.py", line 1', folder), []);
  assert.deepEqual(traceLinks('  File "<frozen runpy>", line 198, in _run_module_as_main', folder), []);
  assert.deepEqual(traceLinks(line, undefined), [], 'no workspace known: no links');
});
