#!/usr/bin/env bash
# Installs, from Debian's archive, every package ParaScope needs to build, test and run on its
# bundled data. Idempotent: packages already present are skipped, so a second run is quick.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libgl-dev libxkbcommon-dev libvulkan-dev
  qt6-svg-dev
  xvfb xauth
  libopenblas-dev libdnnl-dev libopenmpi-dev openmpi-bin
  nlohmann-json3-dev zlib1g-dev libisal-dev libcli11-dev libsimdjson-dev libaio-dev
  clang-22 libclang-rt-22-dev lld-22 clang-tidy-22
  fortunes dataset-fashion-mnist
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
