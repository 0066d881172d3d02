/**
 * The sandbox's seccomp filter (bwrap `--seccomp FD`): inside, socket(2) of the Unix family
 * fails with EAFNOSUPPORT. A Unix socket is reached by connect(2) on its path — or on a name
 * in the abstract namespace, which belongs to the network namespace the sandbox shares and so
 * cannot be hidden by any mount. Refusing the socket itself closes both: no host service
 * (session bus, docker, an ssh or gpg agent, an X server) can be reached, wherever its socket
 * is. Pairs of connected sockets (socketpair(2), what Node and the shell use for a child's
 * pipes) are a separate call and stay allowed, as does every other family (the network).
 *
 * A classic BPF program over `struct seccomp_data` {nr: u32, arch: u32, ip: u64, args: u64[6]},
 * built for this machine's architecture (x86-64, with its 32-bit compat calls, or arm64);
 * undefined elsewhere (the sandbox then relies on its emptied socket folders alone).
 */

const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const EAFNOSUPPORT = 97;
const RET_ERRNO = 0x00050000 | EAFNOSUPPORT;
const AF_UNIX = 1;
/** Offsets in struct seccomp_data (args[0]'s low half on a little-endian machine). */
const NR = 0;
const ARCH = 4;
const ARG0 = 16;
/** x86-64 calls with this bit set are the x32 ABI's, whose socket(2) the filter must refuse too. */
const X32_BIT = 0x40000000;
/** socketcall(2)'s first argument for socket(2) (32-bit x86 multiplexes the socket calls). */
const SYS_SOCKET = 1;

type Instruction = { code: number; k: number; jt?: string; jf?: string } | { label: string };

/** socket(2) numbers per audit architecture, and the 32-bit socketcall(2) where it exists. */
const ARCHES: Record<string, Array<{ audit: number; socket: number; socketcall?: number; x32?: boolean }>> = {
  x64: [
    { audit: 0xc000003e, socket: 41, x32: true },
    { audit: 0x40000003, socket: 359, socketcall: 102 },
  ],
  arm64: [{ audit: 0xc00000b7, socket: 198 }],
};

function program(arch: string): Instruction[] | undefined {
  const targets = ARCHES[arch];
  if (!targets) return undefined;
  const out: Instruction[] = [];
  targets.forEach((target, index) => {
    const next = `arch${index + 1}`;
    out.push({ code: LD_W_ABS, k: ARCH }, { code: JEQ_K, k: target.audit, jf: next }, { code: LD_W_ABS, k: NR });
    if (target.x32) out.push({ code: JGE_K, k: X32_BIT, jt: `x32_${index}` });
    if (target.socketcall !== undefined) out.push({ code: JEQ_K, k: target.socketcall, jt: `socketcall${index}` });
    out.push({ code: JEQ_K, k: target.socket, jf: "allow" });
    out.push({ code: LD_W_ABS, k: ARG0 }, { code: JEQ_K, k: AF_UNIX, jt: "deny", jf: "allow" });
    if (target.x32) {
      // An x32 call: refuse its socket(2) of the Unix family, allow the rest.
      out.push({ label: `x32_${index}` }, { code: JEQ_K, k: X32_BIT | target.socket, jf: "allow" });
      out.push({ code: LD_W_ABS, k: ARG0 }, { code: JEQ_K, k: AF_UNIX, jt: "deny", jf: "allow" });
    }
    if (target.socketcall !== undefined) {
      // socketcall(SYS_SOCKET, args*): the family is behind a pointer BPF cannot follow, so
      // a 32-bit program's socket(2) is refused whatever its family.
      out.push({ label: `socketcall${index}` }, { code: LD_W_ABS, k: ARG0 });
      out.push({ code: JEQ_K, k: SYS_SOCKET, jt: "deny", jf: "allow" });
    }
    out.push({ label: next });
  });
  out.push({ code: RET_K, k: RET_ALLOW }, { label: "allow" }, { code: RET_K, k: RET_ALLOW });
  out.push({ label: "deny" }, { code: RET_K, k: RET_ERRNO });
  return out;
}

/** The filter as bwrap reads it (struct sock_filter[], little-endian), or undefined on another architecture. */
export function unixSocketFilter(arch: string = process.arch): Buffer | undefined {
  const instructions = program(arch);
  if (!instructions) return undefined;
  const labels = new Map<string, number>();
  const code: Array<Exclude<Instruction, { label: string }>> = [];
  for (const item of instructions) {
    if ("label" in item) labels.set(item.label, code.length);
    else code.push(item);
  }
  const buffer = Buffer.alloc(code.length * 8);
  code.forEach((item, index) => {
    const offset = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const distance = labels.get(label)! - index - 1;
      if (distance < 0 || distance > 255) throw new Error(`seccomp: jump to ${label} out of range`);
      return distance;
    };
    buffer.writeUInt16LE(item.code, index * 8);
    buffer.writeUInt8(offset(item.jt), index * 8 + 2);
    buffer.writeUInt8(offset(item.jf), index * 8 + 3);
    buffer.writeUInt32LE(item.k >>> 0, index * 8 + 4);
  });
  return buffer;
}
