#!/usr/bin/env bash
# bundle.sh — packs what the GPU machine (Ubuntu 24.04, no package manager, no network) needs next
# to the working tree:
#   dist/bin/    the binary built here (it runs on glibc ≥ 2.36 and needs only libstdc++, present
#                there), the jail library the fork server loads, bubblewrap, and serve's HTTP
#                plug-in with Debian's cpp-httplib and the brotli libraries it needs (found through
#                the plug-in's RPATH, $ORIGIN: no LD_LIBRARY_PATH)
#   dist/redis/  Debian's redis-server and redis-cli with the libraries Ubuntu lacks (lib/), behind
#                wrappers that set LD_LIBRARY_PATH for them alone
# On the GPU machine: CUDA_AGENT_HOME=$PWD dist/bin/cuda-agent judge ...
#                     CUDA_AGENT_REDIS_SERVER=$PWD/dist/redis/redis-server python3 -m pytest tests/queue
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build -j "$(nproc)" --target cuda-agent cuda_agent_http cuda_agent_jail >/dev/null
mkdir -p dist/bin
cp build/cuda-agent dist/bin/cuda-agent
strip dist/bin/cuda-agent
# The jail as a library, for the fork server's children (found next to the binary).
cp build/libcuda_agent_jail.so dist/bin/libcuda_agent_jail.so
strip dist/bin/libcuda_agent_jail.so
# bubblewrap for the sandbox: the GPU machine has none and no package manager; Debian's binary runs
# there (it needs libselinux, libcap and libpcre2, which Ubuntu ships). The judge looks next to itself.
if command -v bwrap >/dev/null 2>&1 && ! cmp -s "$(command -v bwrap)" dist/bin/bwrap; then
  cp "$(command -v bwrap)" dist/bin/bwrap
fi

# serve's HTTP plug-in (serve dlopens it from beside the binary) and what of it Ubuntu 24.04 may not
# have: Debian's libcpp-httplib (Ubuntu packages no 0.11) and brotli (absent from its smallest
# images). libssl3, libcrypto, zlib and libstdc++ are Ubuntu's own.
cp build/libcuda_agent_http.so dist/bin/libcuda_agent_http.so
strip dist/bin/libcuda_agent_http.so
ldd build/libcuda_agent_http.so | awk '$1 ~ /^lib(cpp-httplib|brotli)/ && $3 ~ /^\// {print $1, $3}' |
  while read -r soname path; do
    cp -L "$path" "dist/bin/$soname"
  done

# redis-server for the Redis tests and bench/dist_scaling.py, redis-cli for the tests: Debian's
# builds (Debian's redis-server is redis-check-rdb under another name; run by a path that ends in
# redis-server it is the server) with the libraries Ubuntu 24.04 does not ship. glibc, libm,
# libstdc++, OpenSSL 3 (libssl3t64 there), libsystemd0 and what it pulls (libcap, libgcrypt,
# liblzma, libzstd, liblz4) are Ubuntu's.
if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
  rm -rf dist/redis
  mkdir -p dist/redis/bin dist/redis/lib
  cp -L "$(command -v redis-server)" dist/redis/bin/redis-server
  cp -L "$(command -v redis-cli)" dist/redis/bin/redis-cli
  strip dist/redis/bin/redis-server dist/redis/bin/redis-cli
  ubuntu_has='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libssl|libcrypto|libsystemd|libcap|libgcrypt|libgpg-error|liblzma|libzstd|liblz4)\.so'
  for tool in dist/redis/bin/redis-server dist/redis/bin/redis-cli; do
    ldd "$tool" | awk '$3 ~ /^\// {print $1, $3}'
  done | sort -u | while read -r soname path; do
    if ! [[ "$soname" =~ $ubuntu_has ]]; then cp -L "$path" "dist/redis/lib/$soname"; fi
  done
  for tool in redis-server redis-cli; do
    cat > "dist/redis/$tool" <<WRAPPER
#!/usr/bin/env bash
# $tool — Debian's build (scripts/bundle.sh) with the libraries in lib/ that Ubuntu 24.04 lacks.
here="\$(cd "\$(dirname "\$(readlink -f "\$0")")" && pwd)"
export LD_LIBRARY_PATH="\$here/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "\$here/bin/$tool" "\$@"
WRAPPER
    chmod +x "dist/redis/$tool"
  done
  echo "dist/redis: redis-server, redis-cli; carried libraries: $(ls dist/redis/lib | tr '\n' ' ')"
else
  echo "dist/redis: skipped (no redis-server/redis-cli here: scripts/setup.sh installs them)" >&2
fi

echo "dist/bin/cuda-agent: $(du -h dist/bin/cuda-agent | cut -f1); needs:"
ldd dist/bin/cuda-agent | awk '{print "  " $1}'
echo "dist/bin/libcuda_agent_http.so loads:"
ldd dist/bin/libcuda_agent_http.so | awk '$1 ~ /^lib(cpp-httplib|brotli)/ {print "  " $1 " => " $3}'
echo "dist/: $(du -sh dist | cut -f1)"
