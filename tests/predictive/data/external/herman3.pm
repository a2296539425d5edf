// Herman's self-stabilising ring (3 processes), synchronous, as in PRISM's "herman" case study.
// Written for agentguard from the published description. p: probability of passing the token.
dtmc
const double p = 0.5;

module process1
	x1 : bool;
	[step] (x1=x3) -> p : (x1'=!x1) + 1-p : (x1'=x1);
	[step] !(x1=x3) -> (x1'=x3);
endmodule
module process2 = process1 [ x1=x2, x3=x1 ] endmodule
module process3 = process1 [ x1=x3, x3=x2 ] endmodule

init true endinit

formula num_tokens = (x1=x2?1:0)+(x2=x3?1:0)+(x3=x1?1:0);
label "stable" = num_tokens=1;
rewards "steps" true : 1; endrewards
