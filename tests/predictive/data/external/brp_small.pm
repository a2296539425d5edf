// Bounded retransmission protocol, simplified (after PRISM's "brp" case study; written for agentguard):
// N chunks, each sent at most MAX+1 times over a lossy channel (loss probability pL).
dtmc
const int N = 8;
const int MAX = 3;
const double pL = 0.02;

module sender
	i : [0..N] init 0;     // chunks delivered
	r : [0..MAX] init 0;   // retransmissions of the current chunk
	ok : bool init true;
	[] ok & i<N & r<MAX -> 1-pL : (i'=i+1) & (r'=0) + pL : (r'=r+1);
	[] ok & i<N & r=MAX -> 1-pL : (i'=i+1) & (r'=0) + pL : (ok'=false);
	[] !ok | i=N -> true;
endmodule

label "success" = i=N;
label "failure" = !ok;
rewards "sends" ok & i<N : 1; endrewards
