// The images the Compute Engine emulator knows, and images.getFromFamily as Compute Engine answers it: the
// newest image of the family that is not deprecated, else 404 notFound (cloud.google.com/compute/docs/
// reference/rest/v1/images/getFromFamily). Deep Learning VM families are retired with their OS or CUDA line
// (the Debian 11 / CUDA 12.4 "common-cu124-debian-11-py310" family has only deprecated images left), so a
// client that names a family without checking it fails only at insert time.
export interface GceImage {
  readonly project: string;
  readonly name: string;
  readonly family: string;
  readonly diskSizeGb: number;
  readonly created: string;
  readonly deprecated?: 'DEPRECATED' | 'OBSOLETE' | 'DELETED';
}

export const DLVM_PROJECT = 'deeplearning-platform-release';

export const GCE_IMAGES: GceImage[] = [
  {
    project: DLVM_PROJECT,
    name: 'common-cu124-v20250110-debian-11-py310',
    family: 'common-cu124-debian-11-py310',
    diskSizeGb: 50,
    created: '2025-01-10T00:00:00.000-08:00',
    deprecated: 'DEPRECATED',
  },
  {
    project: DLVM_PROJECT,
    name: 'pytorch-2-7-cu128-v20250801-ubuntu-2204-nvidia-570',
    family: 'pytorch-2-7-cu128-ubuntu-2204-nvidia-570',
    diskSizeGb: 100,
    created: '2025-08-01T00:00:00.000-07:00',
  },
  {
    project: DLVM_PROJECT,
    name: 'pytorch-2-7-cu128-v20250925-ubuntu-2204-nvidia-570',
    family: 'pytorch-2-7-cu128-ubuntu-2204-nvidia-570',
    diskSizeGb: 100,
    created: '2025-09-25T00:00:00.000-07:00',
  },
];

export function imageFromFamily(images: readonly GceImage[], project: string, family: string): GceImage | undefined {
  return images.filter((i) => i.project === project && i.family === family && !i.deprecated).sort((a, b) => b.created.localeCompare(a.created))[0];
}

/** An image a disk may be made from: a family resolves as getFromFamily does; a named image must not be obsolete or deleted. */
export function resolveSourceImage(images: readonly GceImage[], source: string): GceImage | undefined {
  const m = /^(?:https:\/\/[^/]+\/compute\/v1\/)?projects\/([^/]+)\/global\/images\/(family\/)?([^/]+)$/.exec(source);
  if (!m) return undefined;
  const [, project, isFamily, name] = m;
  if (isFamily) return imageFromFamily(images, project!, name!);
  return images.find((i) => i.project === project && i.name === name && i.deprecated !== 'OBSOLETE' && i.deprecated !== 'DELETED');
}

export function imageJson(base: string, i: GceImage): unknown {
  return {
    kind: 'compute#image',
    id: String(Math.abs([...i.name].reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 7))),
    creationTimestamp: i.created,
    name: i.name,
    family: i.family,
    status: 'READY',
    sourceType: 'RAW',
    diskSizeGb: String(i.diskSizeGb),
    architecture: 'X86_64',
    selfLink: `${base}/compute/v1/projects/${i.project}/global/images/${i.name}`,
    ...(i.deprecated ? { deprecated: { state: i.deprecated } } : {}),
  };
}
