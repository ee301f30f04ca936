"""Runs OpenStack Barbican or Keystone for Watchword's tests, with the
system python3 and the packages that hack/tools.sh unpacked (PYTHONPATH
points into them). Each server is a waitress WSGI server with a single
worker thread on a loopback port, so that requests reach the SQLite
database one at a time.

    launch.py barbican PASTE_INI PORT       (config: $HOME/.barbican/barbican.conf)
    launch.py keystone CONFIG_DIR PORT      (config: CONFIG_DIR/keystone.conf)
    launch.py keystone-setup CONFIG_FILE ADMIN_PASSWORD PUBLIC_URL
"""
import os
import sys
import warnings

# Policy deprecation warnings from oslo.policy would fill the log.
warnings.simplefilter('ignore')


def serve(app, port):
    import waitress
    waitress.serve(app, host='127.0.0.1', port=int(port), threads=1)


def main(argv):
    mode = argv[1]
    if mode == 'barbican':
        from paste import deploy
        serve(deploy.loadapp('config:' + argv[2]), argv[3])
    elif mode == 'keystone':
        os.environ['OS_KEYSTONE_CONFIG_DIR'] = argv[2]
        # Keystone parses the command line as its own options.
        sys.argv = sys.argv[:1]
        from keystone.server import wsgi
        serve(wsgi.initialize_public_application(), argv[3])
    elif mode == 'keystone-setup':
        # keystone-manage db_sync, then bootstrap, in one interpreter.
        from keystone.cmd import cli
        base = ['keystone-manage', '--config-file', argv[2]]
        cli.main(argv=base + ['db_sync'])
        cli.CONF(args=base[1:] + [
            'bootstrap', '--bootstrap-password', argv[3],
            '--bootstrap-username', 'admin', '--bootstrap-project-name', 'admin',
            '--bootstrap-role-name', 'admin', '--bootstrap-service-name', 'keystone',
            '--bootstrap-region-id', 'RegionOne', '--bootstrap-public-url', argv[4],
        ], project='keystone')
        cli.CONF.command.cmd_class.main()
    else:
        sys.exit('unknown mode ' + mode)


if __name__ == '__main__':
    main(sys.argv)
