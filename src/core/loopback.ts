/** Whether a URL's hostname is this machine: plain http there reaches no network, so a local server or a test emulator may use it. */
export function isLoopbackHostname(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}
