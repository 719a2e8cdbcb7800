#!/usr/bin/python3
"""Generate the hwloc XML test topologies under tests/fixtures.

Each fixture is an hwloc synthetic description (rendered by lstopo, so the
CPU side is exactly what hwloc itself would build) plus PCI devices injected
below a host bridge attached to a chosen package. That is how a real machine
looks to hwloc: I/O objects hang off the package (or NUMA-less machine) that
is local to them.

Usage: gen-topology.py OUT_DIR [NAME ...]   (default: every fixture)
"""
import subprocess
import sys
import xml.etree.ElementTree as ET

GiB = 1 << 30

# PCI class ids: 0x0380 display controller (AMD Instinct MI200), 0x0302 3D
# controller (NVIDIA data-centre GPUs), 0x0108 NVMe, 0x0200 Ethernet,
# 0x0207 InfiniBand.
AMD, NVIDIA, MELLANOX, SAMSUNG, INTEL = 0x1002, 0x10DE, 0x15B3, 0x144D, 0x8086


def gpu(bus, vendor, device, klass):
    # No OS device: without the vendor plugins hwloc finds none for a GPU
    # either; gpufeed recognises GPUs by PCI vendor and class.
    return dict(bus=bus, vendor=vendor, device=device, klass=klass, osdevs=[])


def nvme(bus, name):
    return dict(bus=bus, vendor=SAMSUNG, device=0xA80A, klass=0x0108,
                osdevs=[(name, 0)])  # osdev_type 0 = block


def nic(bus, vendor, device, klass, name):
    return dict(bus=bus, vendor=vendor, device=device, klass=klass,
                osdevs=[(name, 2)])  # osdev_type 2 = network


def mi250x_node():
    # 2 sockets x 32 cores; 4 OAM packages x 2 GCDs = 8 GCDs, 4 per socket.
    per_socket = []
    for socket in range(2):
        devs = []
        for gcd in range(4):
            bus = (0xC1 if socket else 0x11) + gcd * 0x08
            devs.append(gpu(bus, AMD, 0x740C, 0x0380))
        devs.append(nvme(0x01 + socket * 0x80, f"nvme{socket}n1"))
        devs.append(nic(0x05 + socket * 0x80, MELLANOX, 0x101B, 0x0207, f"ib{socket}"))
        per_socket.append(devs)
    return dict(synthetic=f"pack:2 [numa(memory={256 * GiB})] l3:4 core:8 pu:2",
                hostname="mi250x-node", io=per_socket)


def nvidia_node():
    # 2 sockets x 24 cores, 8 NVIDIA H100 SXM5, 4 per socket, 1 NVMe + 1 NIC each.
    per_socket = []
    for socket in range(2):
        devs = [gpu(0x18 + socket * 0x80 + i * 0x10, NVIDIA, 0x2330, 0x0302)
                for i in range(4)]
        devs.append(nvme(0x0C + socket * 0x80, f"nvme{socket}n1"))
        devs.append(nic(0x0D + socket * 0x80, INTEL, 0x1592, 0x0200, f"eth{socket}"))
        per_socket.append(devs)
    return dict(synthetic=f"pack:2 [numa(memory={512 * GiB})] l3:2 core:12 pu:2",
                hostname="h100-node", io=per_socket)


def cpu_only():
    return dict(synthetic=f"pack:1 [numa(memory={32 * GiB})] l3:1 core:8 pu:2",
                hostname="cpu-box",
                io=[[nvme(0x01, "nvme0n1"), nic(0x02, INTEL, 0x1533, 0x0200, "eth0")]])


FIXTURES = {"mi250x-2s-8gcd": mi250x_node, "nvidia-2s-8gpu": nvidia_node,
            "cpu-1s-nogpu": cpu_only}


def add_io(package, devices, domain, gp):
    """Hang a host bridge with the given PCI devices below a package."""
    buses = [d["bus"] for d in devices]
    bridge = ET.SubElement(package, "object", {
        "type": "Bridge", "gp_index": str(next(gp)), "bridge_type": "0-1",
        "depth": "0",
        "bridge_pci": f"{domain:04x}:[{min(buses):02x}-{max(buses):02x}]"})
    for d in devices:
        pci = ET.SubElement(bridge, "object", {
            "type": "PCIDev", "gp_index": str(next(gp)),
            "pci_busid": f"{domain:04x}:{d['bus']:02x}:00.0",
            "pci_type": f"{d['klass']:04x} [{d['vendor']:04x}:{d['device']:04x}] "
                        f"[{d['vendor']:04x}:0000] 00",
            "pci_link_speed": "0.000000"})
        for name, kind in d["osdevs"]:
            ET.SubElement(pci, "object", {"type": "OSDev", "gp_index": str(next(gp)),
                                          "name": name, "osdev_type": str(kind)})


def render(spec):
    xml = subprocess.run(["lstopo-no-graphics", "-i", spec["synthetic"], "--of", "xml"],
                         check=True, capture_output=True, text=True).stdout
    root = ET.fromstring(xml.split("\n", 2)[2])  # drop the XML + DOCTYPE lines
    machine = root.find("object")
    # Keep only what is about the fixture, not about the run that made it.
    for info in list(machine.findall("info")):
        if info.get("name") in ("ProcessName", "hwlocVersion"):
            machine.remove(info)
    # hwloc wants a Machine's info elements before its child objects.
    infos = machine.findall("info")
    machine.insert(len(infos), ET.Element("info", {"name": "HostName", "value": spec["hostname"]}))
    gp = iter(range(10000, 20000))
    for package, devices in zip(machine.findall("object[@type='Package']"), spec["io"]):
        add_io(package, devices, 0, gp)
    ET.indent(root, "  ")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n' + ET.tostring(root, encoding="unicode") + "\n")


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    names = argv[2:] or sorted(FIXTURES)
    for name in names:
        if name not in FIXTURES:
            sys.exit(f"gen-topology: unknown fixture {name!r}; known: {', '.join(sorted(FIXTURES))}")
        with open(f"{argv[1]}/{name}.xml", "w", encoding="utf-8") as out:
            out.write(render(FIXTURES[name]()))


if __name__ == "__main__":
    main(sys.argv)
