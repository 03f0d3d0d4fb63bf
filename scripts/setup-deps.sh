#!/usr/bin/env bash
# Installs the Debian packages predrop needs, only those missing. Safe to run again.
# Usage: scripts/setup-deps.sh [--bench | --demo]
#   --bench adds the congestion test-bed tools; --demo installs only what scripts/demo.sh needs
#   (the server's and client's build dependencies, ffmpeg for the clip, iproute2 for the bed).
set -euo pipefail

demo_packages=(
  build-essential cmake pkg-config
  libuv1-dev libsrtp2-dev libssl-dev
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libavfilter-dev ffmpeg
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libeigen3-dev zlib1g-dev
  iproute2
)
packages=(
  build-essential cmake pkg-config git
  libuv1-dev libsrtp2-dev libssl-dev
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libavfilter-dev ffmpeg
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libeigen3-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  dataset-fashion-mnist
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
  gstreamer1.0-libav gstreamer1.0-rtsp python3-gi gir1.2-gst-plugins-base-1.0 gir1.2-gstreamer-1.0
  clang-tidy clang-format shellcheck curl
  libnetfilter-queue-dev
  python3-torch python3-torchvision
  dpkg-dev python3-venv python3-setuptools python3-wheel
)
if [[ "${1:-}" == "--demo" ]]; then
  packages=("${demo_packages[@]}")
elif [[ "${1:-}" == "--bench" ]]; then
  packages+=(iproute2 iperf3 gnuplot-nox valgrind tcpdump iptables iputils-ping ethtool)
  # The Chromium <-> Chromium WebRTC peer on the bed (bench/testbed/webrtc-peer/): Debian's
  # browser, driven by node over its DevTools pipe (no npm package, no browser download).
  packages+=(chromium nodejs)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup-deps: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup-deps: need root to install packages (run as root or install them yourself)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
