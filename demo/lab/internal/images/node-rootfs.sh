#!/bin/bash
# Turn a debootstrapped Debian root filesystem ($R) into a kind node root
# filesystem, following kind's images/base/Dockerfile with kind's own files
# ($F, from the kind module), and lay out the component image directories
# ($I) from the Kubernetes binaries ($BIN) and etcd/coredns/pause ($X).
set -euo pipefail
: "${R:?}" "${F:?}" "${BIN:?}" "${X:?}" "${I:?}" "${KV:?}"
find $R/usr/share/locale -mindepth 1 -maxdepth 1 ! -name 'locale.alias' -exec rm -rf {} + 2>/dev/null || true
install -m 0755 $F/usr/local/bin/* $R/usr/local/bin/ 2>/dev/null || true
mkdir -p $R/kind/bin $R/etc/containerd $R/etc/default $R/etc/sysctl.d $R/etc/systemd/system/kubelet.service.d
cp -r $F/kind/. $R/kind/; chmod -R a+rX $R/kind; chmod 0755 $R/kind $R/kind/bin $R/kind/bin/*
install -m 0644 $F/etc/crictl.yaml $R/etc/
install -m 0644 $F/etc/default/* $R/etc/default/
install -m 0644 $F/etc/sysctl.d/* $R/etc/sysctl.d/
install -m 0644 $F/etc/systemd/system/*.service $F/etc/systemd/system/*.slice $R/etc/systemd/system/
install -m 0644 $F/etc/systemd/system/kubelet.service.d/* $R/etc/systemd/system/kubelet.service.d/
# kind's containerd config works with Debian's containerd 1.6 minus the
# fuse-overlayfs proxy plugin, and with restrict_oom_score_adj = true: without
# CAP_SYS_RESOURCE nothing may lower oom_score_adj and every sandbox fails.
sed -e '/^\[proxy_plugins\]/,/^  address = /d' -e 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' \
  $F/etc/containerd/config.toml > $R/etc/containerd/config.toml
ln -sf /usr/bin/containerd $R/usr/local/bin/containerd
chroot $R ctr oci spec \
  | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
  | jq 'del(.process.rlimits)' > $R/etc/containerd/cri-base.json
mkdir -p $R/opt/cni; rm -rf $R/opt/cni/bin; ln -s /usr/lib/cni $R/opt/cni/bin
mkdir -p $R/etc/cni/net.d
# Single node: a static bridge network instead of kindnetd.
cat > $R/etc/cni/net.d/10-lab-bridge.conflist <<'CNI'
{
  "cniVersion": "0.4.0",
  "name": "lab-bridge",
  "plugins": [
    { "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
      "ipam": { "type": "host-local", "ranges": [[{ "subnet": "10.244.0.0/24" }]], "routes": [{ "dst": "0.0.0.0/0" }] } },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
CNI
find $R/lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete
rm -f $R/lib/systemd/system/multi-user.target.wants/* $R/etc/systemd/system/*.wants/* \
      $R/lib/systemd/system/local-fs.target.wants/* $R/lib/systemd/system/sockets.target.wants/*udev* \
      $R/lib/systemd/system/sockets.target.wants/*initctl* $R/lib/systemd/system/basic.target.wants/*
grep -q '^ReadKMsg=no' $R/etc/systemd/journald.conf || echo "ReadKMsg=no" >> $R/etc/systemd/journald.conf
ln -sf /usr/lib/systemd/systemd $R/sbin/init
chroot $R systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
chroot $R systemctl mask systemd-binfmt.service >/dev/null 2>&1
mkdir -p $R/etc/kubernetes/manifests $R/kind/manifests
install -m 0755 $BIN/kubeadm $BIN/kubelet $BIN/kubectl $R/usr/bin/
echo -n "$KV" > $R/kind/version
cat > $R/kind/manifests/default-cni.yaml <<'CNI'
apiVersion: v1
kind: ConfigMap
metadata:
  name: lab-cni
  namespace: kube-system
data:
  note: "pod network: static bridge CNI (/etc/cni/net.d/10-lab-bridge.conflist), single node"
CNI

# Component image directories.
rm -rf $I; mkdir -p $I
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  mkdir -p $I/$c/usr/local/bin; cp $BIN/$c $I/$c/usr/local/bin/
done
mkdir -p $I/etcd/usr/local/bin $I/etcd/var/lib/etcd $I/etcd/tmp; cp $X/etcd $I/etcd/usr/local/bin/
mkdir -p $I/coredns/etc; cp $X/coredns $I/coredns/coredns
mkdir -p $I/pause; cp $X/pause $I/pause/pause
# kube-proxy: iptables (legacy and nft, chosen like iptables-wrappers), conntrack,
# nft and ipset with their libraries, taken from the node's own packages.
P=$I/kube-proxy; mkdir -p $P/bin $P/usr/local/bin $P/usr/sbin $P/run $P/tmp $P/var/run $P/etc
cp $BIN/kube-proxy $P/usr/local/bin/
for b in /bin/sh /bin/dash /bin/grep /bin/ln /bin/cat /usr/bin/wc; do [ -e $R$b ] && cp -L $R$b $P/bin/ || true; done
for b in /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi /usr/sbin/conntrack /usr/sbin/nft /usr/sbin/ipset; do cp $R$b $P/usr/sbin/; done
mkdir -p $P/usr/lib/x86_64-linux-gnu/xtables; cp -a $R/usr/lib/x86_64-linux-gnu/xtables/. $P/usr/lib/x86_64-linux-gnu/xtables/
for l in $(chroot $R sh -c 'ldd /bin/sh /bin/grep /bin/ln /bin/cat /usr/bin/wc /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi /usr/sbin/conntrack /usr/sbin/nft /usr/sbin/ipset /usr/lib/x86_64-linux-gnu/xtables/*.so' | awk '/=> \// {print $3} /^\t\// {print $1}' | sort -u); do
  mkdir -p $P$(dirname $l); cp -L $R$l $P$l
done
echo 'root:x:0:0:root:/root:/bin/sh' > $P/etc/passwd; echo 'root:x:0:' > $P/etc/group
cp $R/etc/protocols $R/etc/services $P/etc/
for m in legacy nft; do for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do ln -sf xtables-$m-multi $P/usr/sbin/$t-$m; done; done
cat > $P/usr/sbin/iptables-wrapper <<'WRAP'
#!/bin/sh
# Pick the iptables backend the node uses (the rule of kind's entrypoint).
legacy=$( (iptables-legacy-save; ip6tables-legacy-save) 2>/dev/null | grep -c '^-')
nft=$( (iptables-nft-save; ip6tables-nft-save) 2>/dev/null | grep -c '^-')
if [ "$legacy" -ge "$nft" ]; then mode=legacy; else mode=nft; fi
for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -sf xtables-$mode-multi /usr/sbin/$t
done
exec "$0" "$@"
WRAP
chmod 755 $P/usr/sbin/iptables-wrapper
for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do ln -sf iptables-wrapper $P/usr/sbin/$t; done
