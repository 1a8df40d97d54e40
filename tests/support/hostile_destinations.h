// The hostile table: spellings of internal destinations (loopback, private,
// link-local, metadata, every IPv4-in-IPv6 form, names that resolve to them)
// the SsrfGuard must refuse, and the fake DNS answers its names need. The
// SSRF suite checks the guard against it; the egress suite checks that a
// forward proxy changes nothing.
#pragma once

#include <string_view>

#include "tests/support/static_resolver.h"

namespace webhooker::testing {

// The names the hostile table resolves.
inline void addHostileNames(StaticResolver& dns) {
  dns.set("evil.example", {"10.0.0.5"});
  dns.set("mixed.example", {"93.184.216.34", "127.0.0.1"});  // one bad address is enough
  dns.set("mixed-last.example", {"93.184.216.34", "2606:2800:220:1::1", "fe80::1"});
  dns.set("rebind.example", {"169.254.169.254"});
  dns.set("metadata.example", {"fd00:ec2::254"});
  dns.set("mapped.example", {"::ffff:192.168.0.1"});
  dns.set("nat64.example", {"64:ff9b::a9fe:a9fe"});
  dns.set("cgnat.example", {"100.100.100.200"});
  dns.set("localhost", {"127.0.0.1", "::1"});
}

struct Hostile {
  std::string_view url;
  bool needsDns;  // a host name: vetLiteral lets it through, vet resolves it
};

inline const Hostile kHostile[] = {
    {"http://127.0.0.1/", false},
    {"http://127.1/", false},
    {"http://127.0.1/", false},
    {"http://2130706433/", false},
    {"http://0x7f000001/", false},
    {"http://017700000001/", false},
    {"http://0177.0.0.1/", false},
    {"http://0x7f.1/", false},
    {"http://0x7f.0.0.1/", false},
    {"http://0/", false},
    {"http://0.0.0.0/", false},
    {"http://0.0.0.0:8080/", false},
    {"http://127.0.0.1./", false},                    // trailing root dot
    {"https://127.0.0.1:8443/", false},
    {"http://user:pass@127.0.0.1/", false},
    {"http://evil.example@127.0.0.1/", false},        // the host is after the @
    {"http://[::1]/", false},
    {"http://[::]/", false},
    {"http://[::ffff:127.0.0.1]/", false},
    {"http://[::ffff:7f00:1]/", false},
    {"http://[::127.0.0.1]/", false},
    {"http://[0:0:0:0:0:ffff:127.0.0.1]/", false},
    {"http://[::ffff:0:127.0.0.1]/", false},          // IPv4-translated
    {"http://[64:ff9b::127.0.0.1]/", false},          // NAT64
    {"http://[64:ff9b:1::a00:1]/", false},            // local-use NAT64
    {"http://[2002:7f00:1::1]/", false},              // 6to4 of 127.0.0.1
    {"http://169.254.169.254/latest/meta-data/", false},
    {"http://169.254.43518/", false},
    {"http://0xa9fea9fe/", false},
    {"http://[::ffff:169.254.169.254]/", false},
    {"http://[::ffff:a9fe:a9fe]/", false},
    {"http://[fd00:ec2::254]/", false},               // AWS metadata over IPv6
    {"http://[fe80::1]/", false},
    {"http://[fe80::1%25eth0]/", false},              // zone id
    {"http://[fc00::1]/", false},
    {"http://[fd12:3456::1]/", false},
    {"http://[fec0::1]/", false},
    {"http://[ff02::1]/", false},
    {"http://[2001:db8::1]/", false},
    {"http://[100::1]/", false},
    {"http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", false},  // Teredo
    {"http://[127.0.0.1]/", false},                   // IPv4 in brackets
    {"http://10.0.0.1/", false},
    {"http://10.255.255.255/", false},
    {"http://10.1/", false},
    {"http://172.16.0.1/", false},
    {"http://172.31.255.255/", false},
    {"http://192.168.1.1/", false},
    {"http://[::ffff:10.0.0.1]/", false},
    {"http://100.64.0.1/", false},
    {"http://192.0.0.1/", false},
    {"http://192.0.2.1/", false},
    {"http://198.18.0.1/", false},
    {"http://198.51.100.1/", false},
    {"http://203.0.113.1/", false},
    {"http://224.0.0.1/", false},
    {"http://240.0.0.1/", false},
    {"http://255.255.255.255/", false},
    {"http://256.0.0.1/", false},                     // numeric but no address: never sent to DNS
    {"http://1.2.3.4.5/", false},
    {"http://0x100000000/", false},
    {"http://localhost/", false},                     // loopback by name, no DNS needed
    {"http://LOCALHOST:8080/", false},
    {"http://localhost./", false},
    {"http://app.localhost/", false},
    {"http://localhost.localdomain/", false},
    {"http://ip6-localhost/", false},
    {"http://evil.example/", true},
    {"http://127.0.0.1:80@evil.example/", true},      // the host is evil.example
    {"http://mixed.example/", true},
    {"http://mixed-last.example/", true},
    {"http://rebind.example/", true},
    {"http://metadata.example/", true},
    {"http://mapped.example/", true},
    {"http://nat64.example/", true},
    {"https://cgnat.example:8443/hook", true},
};


}  // namespace webhooker::testing
