// The EC2 emulator's networks: VPCs, subnets and route tables as an account holds them, with the answers
// EC2 gives (DescribeVpcs, DescribeSubnets, DescribeRouteTables in the Query API's XML). A new account has a
// default VPC with a default subnet per zone (public IPs on launch, a route 0.0.0.0/0 to an internet
// gateway); many accounts have deleted it or never had one, and then a launch without a subnet fails with
// VPCIdNotSpecified. A subnet is public only through a route to an internet gateway: an instance given a
// public address in a subnet without one gets the address, but nothing reaches it.
import { randomBytes } from 'node:crypto';

export interface Vpc {
  id: string;
  cidr: string;
  isDefault: boolean;
}
export interface Subnet {
  id: string;
  vpcId: string;
  zone: string;
  cidr: string;
  mapPublicIp: boolean;
  defaultForAz: boolean;
}
export interface RouteTable {
  id: string;
  vpcId: string;
  main: boolean;
  subnetIds: string[];
  routes: Array<{ dest: string; gatewayId: string }>;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const hex = (n: number): string => randomBytes(n).toString('hex').slice(0, 17);

export class Ec2Networks {
  readonly vpcs: Vpc[] = [];
  readonly subnets: Subnet[] = [];
  readonly routeTables: RouteTable[] = [];

  constructor(private readonly region: string) {
    const vpc: Vpc = { id: 'vpc-0default', cidr: '172.31.0.0/16', isDefault: true };
    this.vpcs.push(vpc);
    ['a', 'b'].forEach((z, n) =>
      this.subnets.push({
        id: `subnet-0default${z}`,
        vpcId: vpc.id,
        zone: `${region}${z}`,
        cidr: `172.31.${n * 16}.0/20`,
        mapPublicIp: true,
        defaultForAz: true,
      }),
    );
    this.routeTables.push({
      id: 'rtb-0default',
      vpcId: vpc.id,
      main: true,
      subnetIds: [],
      routes: [
        { dest: vpc.cidr, gatewayId: 'local' },
        { dest: '0.0.0.0/0', gatewayId: 'igw-0default' },
      ],
    });
  }

  get defaultVpc(): Vpc | undefined {
    return this.vpcs.find((v) => v.isDefault);
  }

  /** What `aws ec2 delete-vpc` on the default VPC (after its subnets) leaves: an account with no default VPC. */
  removeDefaultVpc(): void {
    const d = this.defaultVpc;
    if (!d) return;
    this.vpcs.splice(this.vpcs.indexOf(d), 1);
    for (const s of this.subnets.filter((x) => x.vpcId === d.id)) this.subnets.splice(this.subnets.indexOf(s), 1);
    for (const r of this.routeTables.filter((x) => x.vpcId === d.id)) this.routeTables.splice(this.routeTables.indexOf(r), 1);
  }

  /**
   * A VPC with one subnet per zone given. `public`: its own route table sends 0.0.0.0/0 to an internet
   * gateway; otherwise only the VPC's main table (local routes) applies, as for a private subnet.
   */
  addVpc(options: { zones: readonly string[]; public: boolean; mapPublicIp?: boolean }): { vpc: Vpc; subnets: Subnet[] } {
    const vpc: Vpc = { id: `vpc-${hex(9)}`, cidr: `10.${this.vpcs.length}.0.0/16`, isDefault: false };
    this.vpcs.push(vpc);
    this.routeTables.push({ id: `rtb-${hex(9)}`, vpcId: vpc.id, main: true, subnetIds: [], routes: [{ dest: vpc.cidr, gatewayId: 'local' }] });
    const subnets = options.zones.map((z, n) => ({
      id: `subnet-${hex(9)}`,
      vpcId: vpc.id,
      zone: `${this.region}${z}`,
      cidr: `10.${this.vpcs.length - 1}.${n}.0/24`,
      mapPublicIp: options.mapPublicIp ?? false,
      defaultForAz: false,
    }));
    this.subnets.push(...subnets);
    if (options.public)
      this.routeTables.push({
        id: `rtb-${hex(9)}`,
        vpcId: vpc.id,
        main: false,
        subnetIds: subnets.map((s) => s.id),
        routes: [
          { dest: vpc.cidr, gatewayId: 'local' },
          { dest: '0.0.0.0/0', gatewayId: `igw-${hex(9)}` },
        ],
      });
    return { vpc, subnets };
  }

  /** The route table that governs a subnet: its explicit association, else its VPC's main table. */
  routeTableOf(subnet: Subnet): RouteTable | undefined {
    return this.routeTables.find((r) => r.subnetIds.includes(subnet.id)) ?? this.routeTables.find((r) => r.vpcId === subnet.vpcId && r.main);
  }

  /** Whether traffic from the internet can reach an address in this subnet. */
  reachable(subnet: Subnet): boolean {
    return (this.routeTableOf(subnet)?.routes ?? []).some((r) => r.dest === '0.0.0.0/0' && r.gatewayId.startsWith('igw-'));
  }

  describeVpcs(filters: Map<string, string[]>, ids: string[]): string {
    const isDefault = filters.get('is-default') ?? filters.get('isDefault');
    const vs = this.vpcs.filter((v) => (!ids.length || ids.includes(v.id)) && (!isDefault || isDefault.includes(String(v.isDefault))));
    return `<vpcSet>${vs.map((v) => `<item><vpcId>${v.id}</vpcId><ownerId>123456789012</ownerId><state>available</state><cidrBlock>${v.cidr}</cidrBlock><dhcpOptionsId>dopt-0default</dhcpOptionsId><instanceTenancy>default</instanceTenancy><isDefault>${v.isDefault}</isDefault><tagSet/></item>`).join('')}</vpcSet>`;
  }

  describeSubnets(filters: Map<string, string[]>, ids: string[]): string {
    const ss = this.subnets.filter(
      (s) =>
        (!ids.length || ids.includes(s.id)) &&
        (!filters.get('vpc-id') || filters.get('vpc-id')!.includes(s.vpcId)) &&
        (!filters.get('availability-zone') || filters.get('availability-zone')!.includes(s.zone)) &&
        (!filters.get('default-for-az') || filters.get('default-for-az')!.includes(String(s.defaultForAz))) &&
        (!filters.get('state') || filters.get('state')!.includes('available')),
    );
    return `<subnetSet>${ss.map((s) => `<item><subnetId>${s.id}</subnetId><subnetArn>arn:aws:ec2:${this.region}:123456789012:subnet/${s.id}</subnetArn><state>available</state><ownerId>123456789012</ownerId><vpcId>${s.vpcId}</vpcId><cidrBlock>${s.cidr}</cidrBlock><availableIpAddressCount>250</availableIpAddressCount><availabilityZone>${s.zone}</availabilityZone><defaultForAz>${s.defaultForAz}</defaultForAz><mapPublicIpOnLaunch>${s.mapPublicIp}</mapPublicIpOnLaunch><tagSet/></item>`).join('')}</subnetSet>`;
  }

  describeRouteTables(filters: Map<string, string[]>): string {
    const bySubnet = filters.get('association.subnet-id');
    const byVpc = filters.get('vpc-id');
    const main = filters.get('association.main');
    const rs = this.routeTables.filter(
      (r) => (!bySubnet || r.subnetIds.some((s) => bySubnet.includes(s))) && (!byVpc || byVpc.includes(r.vpcId)) && (!main || main.includes(String(r.main))),
    );
    const routes = (r: RouteTable): string =>
      r.routes
        .map(
          (x) =>
            `<item><destinationCidrBlock>${x.dest}</destinationCidrBlock><gatewayId>${esc(x.gatewayId)}</gatewayId><state>active</state><origin>${x.gatewayId === 'local' ? 'CreateRouteTable' : 'CreateRoute'}</origin></item>`,
        )
        .join('');
    const assocs = (r: RouteTable): string =>
      [
        ...(r.main
          ? [
              `<item><routeTableAssociationId>rtbassoc-${r.id.slice(4)}m</routeTableAssociationId><routeTableId>${r.id}</routeTableId><main>true</main><associationState><state>associated</state></associationState></item>`,
            ]
          : []),
        ...r.subnetIds.map(
          (s) =>
            `<item><routeTableAssociationId>rtbassoc-${s.slice(7)}</routeTableAssociationId><routeTableId>${r.id}</routeTableId><subnetId>${s}</subnetId><main>false</main><associationState><state>associated</state></associationState></item>`,
        ),
      ].join('');
    return `<routeTableSet>${rs.map((r) => `<item><routeTableId>${r.id}</routeTableId><vpcId>${r.vpcId}</vpcId><ownerId>123456789012</ownerId><routeSet>${routes(r)}</routeSet><associationSet>${assocs(r)}</associationSet><propagatingVgwSet/><tagSet/></item>`).join('')}</routeTableSet>`;
  }
}
