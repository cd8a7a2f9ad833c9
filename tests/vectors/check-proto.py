#!/usr/bin/python3
"""Check src/pohmel_vectors.h (written by pohmeld's gen_vectors) against
a third implementation of protocol 1.3's handshake and record arithmetic
(pohmel_proto.h, "Authentication and protection"): Python's hashlib/hmac
and the cryptography package's AES-GCM and ChaCha20-Poly1305. The kernel
checks its own crypto against the same header at module load, so the
three agree or `make check` fails.

  check-proto.py [HEADER]          exit 1 and say what differs
  check-proto.py --generate        print a header from fixed inputs
"""
import hashlib
import hmac
import re
import struct
import sys

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

HDR = 32
TAG = 16
HF_SEALED = 0x0008


def th_of(req, rep):
    # the reply's mac field (last 32 bytes of the body) zeroed
    rep = rep[:-32] + bytes(32)
    return hashlib.sha256(req + rep).digest()


def mac(key, label, th):
    return hmac.new(key, label + th, hashlib.sha256).digest()


def keys(key, th):
    prk = hmac.new(th, key, hashlib.sha256).digest()
    c2s = hmac.new(prk, b"pohmel c2s\x01", hashlib.sha256).digest()
    s2c = hmac.new(prk, b"pohmel s2c\x01", hashlib.sha256).digest()
    return c2s, s2c


def record(kind, key, ctr, inner):
    outer = struct.pack(">IHH", len(inner) + TAG, 0, HF_SEALED) + bytes(24)
    nonce = bytes(4) + struct.pack(">Q", ctr)
    if kind == "sign":
        tag = AESGCM(key).encrypt(nonce, b"", outer + inner)
        return outer + inner + tag
    aead = AESGCM(key) if kind == "aes" else ChaCha20Poly1305(key)
    return outer + aead.encrypt(nonce, inner, outer)


def parse(path):
    text = open(path).read()
    arrays = {}
    for m in re.finditer(r"static const u8 (\w+)\[\w*\] = \{([^}]*)\};", text):
        arrays[m.group(1)] = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-fA-F]{2})", m.group(2)))
    ctr = re.search(r"#define POHMEL_VEC_COUNTER\s+(\d+)", text)
    return arrays, int(ctr.group(1)) if ctr else None


def expected(a, ctr):
    key, req, rep = a["pohmel_vec_key"], a["pohmel_vec_hello_req"], a["pohmel_vec_hello_rep"]
    th = th_of(req, rep)
    c2s, s2c = keys(key, th)
    inner = a["pohmel_vec_inner"]
    return {
        "pohmel_vec_th": th,
        "pohmel_vec_mac_s": mac(key, b"pohmel-s", th),
        "pohmel_vec_mac_c": mac(key, b"pohmel-c", th),
        "pohmel_vec_k_c2s": c2s,
        "pohmel_vec_k_s2c": s2c,
        "pohmel_vec_rec_aes": record("aes", c2s, ctr, inner),
        "pohmel_vec_rec_chacha": record("chacha", c2s, ctr, inner),
        "pohmel_vec_rec_sign": record("sign", c2s, ctr, inner),
    }


def check(path):
    a, ctr = parse(path)
    need = ["pohmel_vec_key", "pohmel_vec_hello_req", "pohmel_vec_hello_rep", "pohmel_vec_inner"]
    missing = [n for n in need if n not in a] + ([] if ctr is not None else ["POHMEL_VEC_COUNTER"])
    if missing:
        print("check-proto: %s lacks %s" % (path, ", ".join(missing)))
        return 1
    bad = 0
    # the reply's mac, where present, is mac_s; the request names the key
    for name, want in expected(a, ctr).items():
        if a.get(name) != want:
            print("check-proto: %s: %s differs from Python's" % (path, name))
            bad += 1
    n = len(a) + 1
    print("check-proto: %d values checked, %d differ" % (n, bad))
    return 1 if bad else 0


def c_array(name, data):
    lines = ["static const u8 %s[] = {" % name]
    for i in range(0, len(data), 8):
        lines.append("\t" + " ".join("0x%02x," % b for b in data[i:i + 8]))
    lines.append("};")
    return "\n".join(lines)


def generate():
    key = bytes(range(1, 33))
    name = b"vec"
    body = struct.pack(">IHHQIHH", 0x504F484D, 1, 3, (1 << 0) | (1 << 8) | (1 << 9), (1 << 20) + 4096, len(name), 0)
    body += bytes(range(0x40, 0x50)) + struct.pack(">Q", 7) + bytes(range(0x80, 0xA0)) + bytes(32)
    req = struct.pack(">IHHIIQII", len(body) + len(name), 1, 0, 1, 0, 0, 0, 0) + body + name
    rbody = struct.pack(">IHHQIHH", 0x504F484D, 1, 3, (1 << 0) | (1 << 8), (1 << 20) + 4096, 0, 0)
    rbody += bytes(range(0x10, 0x20)) + struct.pack(">Q", 9) + bytes(range(0xA0, 0xC0)) + bytes(32)
    rep = struct.pack(">IHHIIQII", len(rbody), 1, 1, 1, 0, 0, 0, 0) + rbody
    inner = struct.pack(">IHHIIQII", 16, 5, 0, 3, 0, 0, 1000, 1000) + struct.pack(">QQ", 1, 1)
    a = {"pohmel_vec_key": key, "pohmel_vec_hello_req": req, "pohmel_vec_hello_rep": rep, "pohmel_vec_inner": inner}
    a.update(expected(a, 5))
    out = ["/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */",
           "/* Protocol 1.3 test vectors (tests/vectors/check-proto.py --generate). */",
           "#ifndef POHMEL_VECTORS_H", "#define POHMEL_VECTORS_H", "",
           "#define POHMEL_VEC_COUNTER\t5", ""]
    for n in ["pohmel_vec_key", "pohmel_vec_hello_req", "pohmel_vec_hello_rep", "pohmel_vec_th",
              "pohmel_vec_mac_s", "pohmel_vec_mac_c", "pohmel_vec_k_c2s", "pohmel_vec_k_s2c",
              "pohmel_vec_inner", "pohmel_vec_rec_aes", "pohmel_vec_rec_chacha", "pohmel_vec_rec_sign"]:
        out += [c_array(n, a[n]), ""]
    out.append("#endif /* POHMEL_VECTORS_H */")
    print("\n".join(out))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--generate"]:
        generate()
        sys.exit(0)
    sys.exit(check(sys.argv[1] if len(sys.argv) > 1 else "src/pohmel_vectors.h"))
