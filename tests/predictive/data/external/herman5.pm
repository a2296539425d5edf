// Herman's self-stabilising ring (5 processes), as in PRISM's "herman" case study; written for agentguard.
dtmc
const double p;

module process1
	x1 : bool;
	[step] (x1=x5) -> p : (x1'=!x1) + 1-p : (x1'=x1);
	[step] !(x1=x5) -> (x1'=x5);
endmodule
module process2 = process1 [ x1=x2, x5=x1 ] endmodule
module process3 = process1 [ x1=x3, x5=x2 ] endmodule
module process4 = process1 [ x1=x4, x5=x3 ] endmodule
module process5 = process1 [ x1=x5, x5=x4 ] endmodule

init true endinit

formula num_tokens = (x1=x2?1:0)+(x2=x3?1:0)+(x3=x4?1:0)+(x4=x5?1:0)+(x5=x1?1:0);
label "stable" = num_tokens=1;
rewards "steps" true : 1; endrewards
