import json,sys,glob,collections
f=sorted(glob.glob('/work/prof/*.cpuprofile'))[-1]
p=json.load(open(f))
nodes={n['id']:n for n in p['nodes']}
self=collections.Counter()
dt=p['timeDeltas']; samples=p['samples']
for s,d in zip(samples,dt):
    self[s]+=d
byfn=collections.Counter()
for nid,t in self.items():
    n=nodes[nid]; cf=n['callFrame']
    key=f"{cf['functionName'] or '(anon)'} {cf['url'].split('/')[-1]}:{cf['lineNumber']}"
    byfn[key]+=t
tot=sum(byfn.values())
print('total ms',tot/1000)
for k,v in byfn.most_common(int(sys.argv[1]) if len(sys.argv)>1 else 40):
    print(f"{v/1000:8.1f} {100*v/tot:5.1f}% {k}")
