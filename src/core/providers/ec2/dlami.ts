// Which AWS Deep Learning AMI an EC2 GPU instance boots, and which instance types it can boot at all.
//
// AWS publishes each DLAMI's current image id as a public SSM parameter and recommends resolving it there
// ("Query AMI-ID with SSM Parameter" in every DLAMI's release notes, docs.aws.amazon.com/dlami): the parameter
// names the image AWS maintains as "latest" for that framework and OS, where a DescribeImages name search
// takes whatever was built last (AWS rebuilds older frameworks with patches, so the newest creation date is
// often an older PyTorch). DescribeImages by name stays as the fallback for accounts whose IAM policy has no
// ssm:GetParameters, and for regions where none of the parameters exists.

export const DLAMI_SSM_PREFIX = '/aws/service/deeplearning/ami/x86_64/';

/**
 * The PyTorch DLAMIs with the OSS NVIDIA driver (the runner needs a CUDA torch on the image: bootstrap reuses
 * /opt/pytorch/bin/python), newest PyTorch first, Ubuntu 24.04 before 22.04 for the same PyTorch. Versions AWS
 * has not published (or has retired) are simply absent from the answer: GetParameters lists them as invalid.
 */
export function dlamiParameterNames(): string[] {
  const out: string[] = [];
  for (let minor = 12; minor >= 5; minor--) {
    for (const os of ['ubuntu-24.04', 'ubuntu-22.04']) out.push(`${DLAMI_SSM_PREFIX}oss-nvidia-driver-gpu-pytorch-2.${minor}-${os}/latest/ami-id`);
  }
  return out;
}

/** DescribeImages fallback (owner amazon): the newest image whose name matches. */
export const DLAMI_NAME_PATTERN = 'Deep Learning OSS Nvidia Driver AMI GPU PyTorch * (Ubuntu 2?.04) *';

/**
 * Instance families the OSS-driver DLAMIs support, from their release notes' supported_ec2_instances
 * (G4dn, G5, G6, Gr6, G6e, P4d, P4de, P5, P5e, P5en). NVIDIA's open kernel modules need Turing or newer, so
 * P3 (V100, Volta) is not among them, and the proprietary-driver DLAMI that still booted P3 (Amazon Linux 2)
 * dropped it in 2026 (release 73.1 lists G3, P4d, Inf1). V100 is therefore not offered on EC2.
 */
const DLAMI_FAMILIES = new Set(['g4dn', 'g5', 'g6', 'gr6', 'g6e', 'p4d', 'p4de', 'p5', 'p5e', 'p5en']);

export function dlamiSupports(instanceType: string): boolean {
  return DLAMI_FAMILIES.has(instanceType.split('.')[0] ?? '');
}
