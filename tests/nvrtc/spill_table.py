#!/usr/bin/env python3
"""The spill table (generator/spills.def): measure its rows, and keep it in step with the templates.

  spill_table.py --fusegen FUSEGEN --measure SPEC...
      compiles each SPEC with NVRTC (`fusegen check --nvrtc`, the spill table ignored through
      FUSEGEN_SPILL_TABLE=ignore) and prints, sorted and once each, the spills.def row of every
      planned variant that spills (`spill` lines of check --nvrtc). Paste them into spills.def.
  spill_table.py --fusegen FUSEGEN --check SPILLS_DEF
      the test `spill_table`: writes one spec kernel per row (its arch, tile, schedule, strategy,
      dtypes, B layout and ops with their values), then
        1. `fusegen check` refuses each kernel at its tile, naming the row's bytes and variant;
        2. compiled with the table ignored, each row's variant still spills, the bytes recorded.
      A row that no longer spills (the templates improved, a new compiler) fails here: take it out.
Exit 0 on success, 1 on a failed check, 2 on bad usage."""
import json
import os
import re
import subprocess
import sys
import tempfile

ROW = re.compile(r'^FG_SPILL\((.*)\)\s*$')


def parse_row(text):
    fields = [f.strip() for f in re.findall(r'"[^"]*"|[^,\s][^,]*', text)]
    if len(fields) != 14:
        raise ValueError('a row has 14 fields: ' + text)
    v = [f[1:-1] if f.startswith('"') else int(f) for f in fields]
    keys = ['arch', 'family', 'm', 'n', 'k', 'stages', 'schedule', 'strategy', 'a', 'b', 'out',
            'b_layout', 'epilogue', 'bytes']
    return dict(zip(keys, v))


def read_table(path):
    rows = []
    with open(path) as f:
        for line in f:
            m = ROW.match(line.strip())
            if m:
                rows.append(parse_row(m.group(1)))
    return rows


def row_key(r):
    return tuple(r[k] for k in ['arch', 'family', 'm', 'n', 'k', 'stages', 'schedule', 'strategy', 'a', 'b',
                                'out', 'b_layout', 'epilogue'])


def ops_of(row):
    ops, stores = [], 0
    for tok in row['epilogue'].split('+'):
        m = re.fullmatch(r'(\w+)(?:\((.*)\))?', tok)
        name, args = m.group(1), (m.group(2) or '').split(',')
        if name == 'scale':
            ops.append({'op': 'scale', 'alpha': float(args[0])})
        elif name == 'residual':
            ops.append({'op': 'residual', 'beta': float(args[0])})
        elif name == 'gelu_tanh':
            ops.append({'op': 'gelu', 'approximate': 'tanh'})
        elif name in ('layernorm', 'rmsnorm'):
            op = {'op': name, 'eps': float(args[0])}
            if 'no_affine' in args[1:]:
                op['affine'] = False
            if row['strategy'] in ('row', 'cluster', 'split'):
                op['strategy'] = row['strategy']
            ops.append(op)
        elif name == 'store':
            ops.append({'op': 'store', 'as': 's%d' % stores})
            stores += 1
        else:
            ops.append({'op': name})
    return ops


def kernel_of(i, row):
    tile = {'m': row['m'], 'n': row['n'], 'k': row['k'], 'stages': row['stages']}
    if row['family'] == 'sm90a':
        archs = ['sm_90a']
        if row['schedule'] != ('pingpong' if row['m'] == 64 else 'cooperative'):
            tile['schedule'] = row['schedule']
    else:
        # a portable variant is compiled for sm_90a beside a Hopper one only when another arch is listed
        archs = [row['arch']] + (['sm_80'] if row['arch'] == 'sm_90a' else [])
    return {'name': 'r%d' % i, 'arch': archs, 'a': row['a'], 'b': row['b'], 'out': row['out'],
            'b_layout': row['b_layout'], 'tiles': [tile], 'epilogue': ops_of(row)}


def run(fusegen, args, ignore):
    env = dict(os.environ)
    if ignore:
        env['FUSEGEN_SPILL_TABLE'] = 'ignore'
    else:
        env.pop('FUSEGEN_SPILL_TABLE', None)
    return subprocess.run([fusegen] + args, env=env, capture_output=True, text=True)


def measured(fusegen, specs):
    """{row key: (bytes, variant name, spec)} of every spilling variant."""
    out = {}
    for spec in specs:
        p = run(fusegen, ['check', '--nvrtc', spec], ignore=True)
        for line in p.stdout.splitlines():
            m = re.match(r'^spill\s+\S+\s+(\S+)\s+FG_SPILL\((.*)\)$', line)
            if m:
                r = parse_row(m.group(2))
                out[row_key(r)] = (r['bytes'], m.group(1), spec)
        if p.returncode not in (0, 1):
            sys.stderr.write(p.stderr)
            raise SystemExit('%s: fusegen check --nvrtc exited %d' % (spec, p.returncode))
    return out


def fmt(key, nbytes):
    r = dict(zip(['arch', 'family', 'm', 'n', 'k', 'stages', 'schedule', 'strategy', 'a', 'b', 'out',
                  'b_layout', 'epilogue'], key))
    return ('FG_SPILL("%(arch)s", "%(family)s", %(m)d, %(n)d, %(k)d, %(stages)d, "%(schedule)s", "%(strategy)s", '
            '"%(a)s", "%(b)s", "%(out)s", "%(b_layout)s", "%(epilogue)s", ' % r) + '%d)' % nbytes


def check(fusegen, table):
    rows = read_table(table)
    if not rows:
        print('PASS the spill table is empty')
        return 0
    fail = 0
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, 'spilltable.json')
        with open(spec, 'w') as f:
            json.dump({'library': 'spilltable', 'kernels': [kernel_of(i, r) for i, r in enumerate(rows)]}, f,
                      indent=1)
        p = run(fusegen, ['check', spec], ignore=False)
        for i, r in enumerate(rows):
            want = re.compile(r': error: /kernels/%d/tiles/0: this tile with epilogue \'%s\' spills %d bytes of '
                              r'registers on %s as variant ' % (i, re.escape(r['epilogue']), r['bytes'], r['arch']))
            if p.returncode != 1 or not any(want.search(l) for l in p.stderr.splitlines()):
                print('FAIL row %d is not refused by check: %s' % (i, fmt(row_key(r), r['bytes'])))
                fail = 1
        if not fail:
            print('PASS check refuses each of the %d rows at its tile' % len(rows))
        got = measured(fusegen, [spec])
        for i, r in enumerate(rows):
            m = got.get(row_key(r))
            if m is None:
                print('FAIL row %d no longer spills (take it out of generator/spills.def): %s'
                      % (i, fmt(row_key(r), r['bytes'])))
                fail = 1
            elif m[0] != r['bytes']:
                print('FAIL row %d spills %d bytes now, not %d (measure it again): %s'
                      % (i, m[0], r['bytes'], fmt(row_key(r), m[0])))
                fail = 1
        if not fail:
            print('PASS each of the %d rows still spills as recorded (NVRTC)' % len(rows))
    return fail


def main(argv):
    if len(argv) < 4 or argv[0] != '--fusegen' or argv[2] not in ('--measure', '--check'):
        sys.stderr.write(__doc__)
        return 2
    fusegen = argv[1]
    if argv[2] == '--check':
        return check(fusegen, argv[3])
    got = measured(fusegen, argv[3:])
    for key in sorted(got):
        print(fmt(key, got[key][0]) + '  /* ' + got[key][1] + ', ' + got[key][2] + ' */')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
