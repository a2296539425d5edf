// Crowds anonymity protocol, tiny instance (after PRISM's "crowds" case study): forward with
// probability PF to a random member; C of N members are corrupt.
dtmc
const int N = 6;
const int C = 1;
const double PF = 0.8;

module crowd
	phase : [0..3] init 0;     // 0 start, 1 at a member, 2 delivered, 3 observed by a corrupt member
	hops : [0..10] init 0;
	[] phase=0 -> (N-C)/N : (phase'=1) & (hops'=1) + C/N : (phase'=3);
	[] phase=1 & hops<10 -> PF*(N-C)/N : (hops'=hops+1) + PF*C/N : (phase'=3) + 1-PF : (phase'=2);
	[] phase=1 & hops=10 -> (phase'=2);
	[] phase>=2 -> true;
endmodule

label "observed" = phase=3;
label "delivered" = phase=2;
rewards "hops" phase=1 : 1; endrewards
