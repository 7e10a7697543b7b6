// This installation's owner id: a random id kept in the extension's storage, put on every instance it launches
// (tag, label or the API's tags), so the orphan sweep never offers to terminate a colleague's instances on a
// shared cloud account, nor one another installation of yours is still using.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createOnce } from './createOnce';

export function ownerIdFor(storageDir: string): string {
  const file = join(storageDir, 'owner-id');
  try {
    const id = readFileSync(file, 'utf8').trim();
    if (/^[a-f0-9]{16}$/.test(id)) return id;
  } catch {
    /* first use */
  }
  const id = randomBytes(8).toString('hex');
  // Two windows opened at once on a first install would otherwise each keep an id, and the instances one of
  // them launched would later look like another owner's, never offered for termination.
  if (createOnce(file, `${id}\n`, 0o600)) return id;
  const theirs = readFileSync(file, 'utf8').trim();
  if (/^[a-f0-9]{16}$/.test(theirs)) return theirs;
  // A damaged file (not an id) is replaced, as before: nothing can be matched against it anyway.
  writeFileSync(file, `${id}\n`, { mode: 0o600 });
  return id;
}
