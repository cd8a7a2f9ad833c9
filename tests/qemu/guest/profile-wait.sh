# shell mode: /etc/profile.d/pohmel.sh — the login shell waits for the
# harness's guest setup, then gets its environment (POHMEL_*).
if [ ! -e /run/pohmel-ready ]; then
	echo "pohmel: waiting for the guest setup (module, pohmeld, mounts)..."
	while [ ! -e /run/pohmel-ready ]; do sleep 1; done
fi
cat /run/pohmel-ready
[ -r /run/pohmel-env ] && . /run/pohmel-env
cd /var/tmp/pohmel 2>/dev/null || true
