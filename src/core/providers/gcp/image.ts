// The image a GCP instance boots: the Deep Learning VM family's newest image, checked before anything is made.
import { requireCloudName } from '../cloudNames';
import { ProviderError } from '../provider';
import type { GcpApi } from './api';
import { DLVM_IMAGE_FAMILY, DLVM_IMAGE_PROJECT } from './catalog';

/**
 * The boot image: the newest non-deprecated image of the family (images.getFromFamily), named exactly in
 * the insert so the image checked is the image booted. A retired family is a clear error before anything
 * is created (an insert naming it fails with a bare 404 after the firewall rule is made).
 */
export async function bootImage(api: GcpApi, signal?: AbortSignal): Promise<{ source: string; diskSizeGb: number }> {
  const project = api.options.imageProject ?? DLVM_IMAGE_PROJECT;
  const family = api.options.imageFamily ?? DLVM_IMAGE_FAMILY;
  requireCloudName('gcp', 'gcp-project', 'image project', project);
  let image: { name?: string; status?: string; diskSizeGb?: string } | undefined;
  try {
    image = (await api.callUrl(
      'GET',
      `${api.root}/projects/${encodeURIComponent(project)}/global/images/family/${encodeURIComponent(family)}`,
      undefined,
      signal,
    )) as typeof image;
  } catch (err) {
    if (!(err instanceof ProviderError && err.code === 'not-found')) throw err;
  }
  if (!image?.name || (image.status && image.status !== 'READY')) {
    throw new ProviderError(
      'not-found',
      `the image family ${family} in project ${project} has no usable image (retired or deprecated): list the current ones with \`gcloud compute images list --project ${project} --no-standard-images\``,
      'gcp',
    );
  }
  return { source: `projects/${project}/global/images/${image.name}`, diskSizeGb: Number(image.diskSizeGb ?? 0) };
}
