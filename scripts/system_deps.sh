#!/usr/bin/env bash
# Makes sure the Debian packages orderup needs are present: installs them when
# running as root, otherwise names the exact command to run. With "test", also
# those the tests need: an audio server with virtual devices for the live table
# (PulseAudio, its command-line tools, and ALSA's plugin that reaches it).
set -euo pipefail
needed=(espeak-ng flite libportaudio2)
if [ "${1:-}" = test ]; then
  needed+=(pulseaudio pulseaudio-utils libasound2-plugins)
fi
missing=()
for pkg in "${needed[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "orderup: installing ${missing[*]} with apt-get" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "orderup needs the system packages: ${missing[*]}" >&2
  echo "run:  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
