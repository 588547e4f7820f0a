/**
 * Binds a UDP socket and a TCP server on one port, as DNS serves (RFC 1035 §4.2): with port 0, on an
 * ephemeral port free for both (the UDP port is taken first, then TCP is tried on it, up to 20 times).
 * A leaf module: the DNS door (src/dnsserver/) and the simulator's DNS server (src/ovhsim/) both use it.
 */
import dgram from 'node:dgram';
import net from 'node:net';

export async function bindUdpAndTcp(host: string, port: number): Promise<{ udp: dgram.Socket; tcp: net.Server; port: number }> {
  let lastError: unknown;
  for (let attempt = 0; attempt < (port === 0 ? 20 : 1); attempt++) {
    const udp = dgram.createSocket({ type: net.isIPv6(host) ? 'udp6' : 'udp4' });
    try {
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(port, host, () => {
          udp.off('error', reject);
          resolve();
        });
      });
    } catch (e) {
      udp.close();
      throw e;
    }
    const bound = udp.address().port;
    const tcp = net.createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(bound, host, () => {
          tcp.off('error', reject);
          resolve();
        });
      });
      return { udp, tcp, port: bound };
    } catch (e) {
      lastError = e;
      udp.close();
    }
  }
  throw lastError instanceof Error ? lastError : new Error('no port free for both UDP and TCP');
}
