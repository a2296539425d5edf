// von Neumann NAND multiplexing, tiny (after PRISM's "nand" case study): N bundle wires,
// gate failure prob perr, input wire stimulated with probability prob1. Written for agentguard.
dtmc
const int N = 4;
const double perr = 0.02;
const double prob1 = 0.9;
module multiplex
	u : [0..N] init 0;   // processed gates
	z : [0..N] init 0;   // outputs stimulated
	[] u<N -> (1-perr)*(1-prob1*prob1) + perr*prob1*prob1 : (z'=z+1) & (u'=u+1)
	        + 1-((1-perr)*(1-prob1*prob1) + perr*prob1*prob1) : (u'=u+1);
	[] u=N -> true;
endmodule
label "target" = u=N & z/N < 0.1;
label "end" = u=N;
