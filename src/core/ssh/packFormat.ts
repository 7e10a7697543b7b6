// The archive format a sync sends (sync.ts), and the host's reader for it. A tar member costs a 512-byte header
// and pads its content to 512 bytes: for a workspace of 10,000 files of 10 KB that was 7.7 MB more to send
// (8% of it, 60 ms on a 1 Gbit/s link), and for a dataset of 1 KB files it doubled the bytes. Here an entry is a
// 29-byte header, its name (and link target), then its bytes, with no padding:
//
//   type   1 byte   'f' file, 'l' symbolic link, 'd' directory, 'e' end of archive
//   mode   uint32   permission bits (big-endian, as every field)
//   mtime  int64    seconds
//   size   uint64   content bytes that follow the name (0 for a link or a directory)
//   name   uint32   byte length of the UTF-8 path that follows (relative, '/'-separated)
//   link   uint32   byte length of the link target that follows the path
//
// The host side is Python (every host that runs the runner has python3, and sync already needs it to apply
// ops): one process per stream, writing each file with its mode and mtime set on the open descriptor.

/** One entry of an archive, and where its content comes from (archiveStream.ts reads it). */
export interface ArchiveEntry {
  /** Path inside the archive (posix separators). */
  readonly name: string;
  readonly size: number;
  /** Unix seconds. */
  readonly mtime: number;
  readonly mode: number;
  /**
   * Local file to read the content from, the content itself, or a function producing it when the entry is
   * reached (after every earlier entry was sent; its length must equal `size`).
   */
  readonly source: string | Buffer | (() => Buffer);
  /** Receives the sha256 (hex) of the content as it was sent (computed while streaming, no second read). */
  readonly onHash?: (hex: string) => void;
  /** Makes the entry a symbolic link to this target (size must be 0, source empty). */
  readonly linkTarget?: string;
  /** Makes the entry a directory (size 0, source empty; the name ends with '/'). */
  readonly directory?: boolean;
}

const HEADER_BYTES = 29;

/** The header (with name and link target) of one entry. */
export function packHeader(e: ArchiveEntry): Buffer {
  const name = Buffer.from(e.name, 'utf8');
  const link = Buffer.from(e.linkTarget ?? '', 'utf8');
  const h = Buffer.allocUnsafe(HEADER_BYTES + name.length + link.length);
  h.write(e.directory ? 'd' : e.linkTarget !== undefined ? 'l' : 'f', 0, 'latin1');
  h.writeUInt32BE(e.mode & 0o7777, 1);
  h.writeBigInt64BE(BigInt(Math.floor(e.mtime)), 5);
  h.writeBigUInt64BE(BigInt(e.size), 13);
  h.writeUInt32BE(name.length, 21);
  h.writeUInt32BE(link.length, 25);
  name.copy(h, HEADER_BYTES);
  link.copy(h, HEADER_BYTES + name.length);
  return h;
}

/** The end of an archive: a reader that meets EOF before it knows the archive was cut short. */
export const PACK_END: Buffer = (() => {
  const b = Buffer.alloc(HEADER_BYTES, 0);
  b.write('e', 0, 'latin1');
  return b;
})();

/**
 * Reads an archive on stdin into the folder argv[1]. Refuses absolute paths and `..` (the client never sends
 * them; a damaged stream must not write outside the folder), an unknown type, and an archive cut short (the
 * connection dropped): it exits non-zero and the apply command applies nothing. Python 3.6 and later. Run
 * with -I -S (extractCommand): nothing from the environment or site-packages, and 10-60 ms less start-up.
 * A file is created with its mode (the umask can only take bits away, and then fchmod puts them back) and
 * its mtime is set on the open descriptor: two system calls fewer per file than chmod and utime by path.
 */
export const PY_UNPACK = `import os,sys,struct
root=sys.argv[1]; r=os.fdopen(0,'rb',1048576); H=struct.Struct('>cIqQII'); made=set()
u=os.umask(0); os.umask(u)
def need(n):
  b=r.read(n)
  if len(b)!=n: sys.exit('archive cut short')
  return b
def put(fd,left):
  while left:
    b=memoryview(need(min(left,8388608))); left-=len(b)
    while b: b=b[os.write(fd,b):]
while True:
  t,mode,mt,size,nl,ll=H.unpack(need(29))
  if t==b'e': break
  name=os.fsdecode(need(nl)); link=os.fsdecode(need(ll)) if ll else ''
  parts=name.strip('/').split('/')
  if name.startswith('/') or '..' in parts or '' in parts: sys.exit('unsafe path in archive: %r'%name)
  p=root+'/'+'/'.join(parts); d=p[:p.rfind('/')]
  if d not in made: os.makedirs(d,exist_ok=True); made.add(d)
  if t==b'f':
    fd=os.open(p,os.O_WRONLY|os.O_CREAT|os.O_TRUNC|os.O_NOFOLLOW,mode)
    put(fd,size)
    if mode&u: os.fchmod(fd,mode)
    os.utime(fd,(mt,mt)); os.close(fd)
  elif t==b'd':
    os.makedirs(p,exist_ok=True); os.chmod(p,mode); made.add(p)
  elif t==b'l':
    os.symlink(link,p)
  else: sys.exit('unknown entry type %r'%t)`;
