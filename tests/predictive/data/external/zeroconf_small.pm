// Zeroconf address collision (simplified DTMC after PRISM's "zeroconf" case study): K probes,
// each lost with probability loss; q = probability the chosen address is in use.
dtmc
const int K = 4;
const double q = 0.1;
const double loss = 0.05;

module host
	st : [0..3] init 0;   // 0 choose, 1 probing, 2 configured (fresh), 3 error (collision unnoticed)
	k : [0..K] init 0;
	used : bool init false;
	[] st=0 -> q : (st'=1) & (used'=true) & (k'=0) + 1-q : (st'=1) & (used'=false) & (k'=0);
	[] st=1 & k<K & used -> 1-loss : (st'=0) + loss : (k'=k+1);
	[] st=1 & k<K & !used -> (k'=k+1);
	[] st=1 & k=K -> (st'= used ? 3 : 2);
	[] st>=2 -> true;
endmodule
label "error" = st=3;
label "ok" = st=2;
rewards "probes" st=1 & k<K : 1; endrewards
