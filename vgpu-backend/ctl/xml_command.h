/* SPDX-License-Identifier: MIT */
/*
 * xml_command.h - `vgpuctl xml`: the libvirt and mdevctl definitions that
 * give a VM a vGPU of a profile (libvirt-xml/README.md).
 *
 * It prints, for one VM and one profile, with one mdev UUID (generated
 * unless given):
 *   - the node-device XML that creates the mdev through libvirt
 *     (virsh nodedev-define / nodedev-start / nodedev-autostart, or
 *     nodedev-create for a transient one),
 *   - the <hostdev type='mdev'> element that assigns it to the domain
 *     (virsh attach-device VM FILE --config, or paste it into <devices>),
 *   - optionally the equivalent mdevctl JSON definition.
 * It needs no vgpud: the parent device and the type come from sysfs
 * (/sys/class/mdev_bus/<parent>/mdev_supported_types/<type>/name is the
 * profile), or from --parent/--type.
 */
#ifndef VGPUCTL_XML_COMMAND_H
#define VGPUCTL_XML_COMMAND_H

/* argv[0] is "xml". Returns vgpuctl's exit status (0, 1 refused, 64 usage). */
int vgpuctl_xml_command(int argc, char **argv);

/* The usage lines of the command, for vgpuctl --help. */
extern const char vgpuctl_xml_usage[];

#endif /* VGPUCTL_XML_COMMAND_H */
